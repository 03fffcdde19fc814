//! The host's async core (tokio): everything that waits (`exec` children,
//! timers, later the RPC and serve I/O and dialog waits) runs on one process-wide runtime,
//! started on first use. Calls into plugins stay synchronous C calls on host threads
//! (`spawn_blocking` or a dispatching thread), and the untimed `tool_call` path never touches
//! the runtime.

use std::sync::OnceLock;

use tokio::runtime::{Builder, Handle, Runtime};

/// The runtime's handle, starting the runtime on first use: two worker threads (this machine
/// class has two cores; the work here is waiting, not computing), time and I/O drivers on.
pub fn handle() -> &'static Handle {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("pi-hooks-async")
                .enable_all()
                .build()
                .expect("start the host's tokio runtime (threads or an epoll instance could not be made)")
        })
        .handle()
}

#[cfg(test)]
mod tests {
    #[test]
    fn runs_tasks_and_timers() {
        let handle = super::handle();
        let answer = handle.block_on(async {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            42
        });
        assert_eq!(answer, 42);
        assert!(
            std::ptr::eq(handle, super::handle()),
            "one runtime per process"
        );
    }
}
