//! Builds the C++ exception barrier (`cxx/exception_barrier.cpp`) that every call into plugin
//! code goes through, against the committed `include/pi_hooks.h`.

fn main() {
    println!("cargo:rerun-if-changed=cxx/exception_barrier.cpp");
    println!("cargo:rerun-if-changed=../include/pi_hooks.h");
    cc::Build::new()
        .cpp(true)
        .std("c++17")
        .file("cxx/exception_barrier.cpp")
        .include("../include")
        .warnings(true)
        .extra_warnings(true)
        .opt_level(2)
        .compile("pi_hooks_exception_barrier");
}
