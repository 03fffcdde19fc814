/*
 * pi_hooks.hpp: small header-only C++17 helpers over pi_hooks.h. Written by hand (not
 * generated); it adds no ABI, only conveniences around the C types. It comes with pi_hooks.h
 * in the pi-hooks binary: `pi-hooks sdk --print-include-dir` prints a folder holding both,
 * `pi-hooks sdk --prefix DIR` installs them (with pkg-config and CMake files).
 *
 *   pi_hooks::Str          a PiStr from a std::string_view, std::string or C string
 *   pi_hooks::view         a std::string_view over a PiStr
 *   pi_hooks::Value        a read-only view of a PiValue (get, pointer, at, as_string,
 *                          iteration over an array, copy, replace_text, json ...)
 *   pi_hooks::OwnedValue   owns a PiValue (one the host handed out, or one built with
 *                          object(), array(), of(...), parse(...), copy()); set and push
 *                          change it (ABI 1.2); frees it with values->free
 *   pi_hooks::Result       setters on the PiResult of a handler (set(key, x), assign(value))
 *   pi_hooks::Context      the PiContext of a call (cwd, has_ui, notify, set_status)
 *   pi_hooks::Plugin       registration with lambdas: on(event), command, tool
 *   PI_HOOKS_CPP_PLUGIN    the entry point, calling a setup(pi_hooks::Plugin &) function
 *   pi_hooks::Error/check  a non-PI_OK status as an exception
 *   pi_hooks::guard        the exception barrier every callback must go through
 *
 * A whole plugin with the lambda API (every lambda runs behind guard(): an exception becomes
 * the call's error, with its what() as the message; in tool_call it blocks the tool):
 *
 *     #include "pi_hooks.hpp"
 *     using namespace pi_hooks;
 *
 *     static void setup(Plugin &pi) {
 *         pi.on("tool_call", [](Value event, Context &, Result &result) {
 *             if (event.get("toolName").as_string() == "bash")
 *                 result.set("block", true).set("reason", "no bash today");
 *         });
 *         pi.command("hi", "Say hi", [](std::string_view args, Context &ctx) {
 *             ctx.notify("hi " + std::string(args));
 *         });
 *     }
 *
 *     PI_HOOKS_CPP_PLUGIN("no-bash", "1.0.0", "Blocks bash", setup);
 *
 * The lower-level pieces below work on their own too (see guard):
 * Exceptions must never escape into the host: the host is not C++ and unwinding through its
 * frames is undefined behaviour (in practice: an abort). Wrap the body of every function the
 * host calls (init, handlers, commands, tools, timers, cleanups) in pi_hooks::guard or
 * pi_hooks::guard_init; they catch everything, report it, and return an error status.
 *
 *     PiStatus on_event(void *, const PiValue *event, PiContext *ctx, PiResult *result) {
 *         return pi_hooks::guard(host, ctx, [&] {
 *             pi_hooks::Value ev(host->values, event);
 *             if (ev.get("toolName").as_string() == "bash")
 *                 pi_hooks::Result(host->results, result).set_bool("block", true);
 *         });
 *     }
 */
#ifndef PI_HOOKS_HPP
#define PI_HOOKS_HPP

#include "pi_hooks.h"

#include <cstddef>
#include <cstdint>
#include <exception>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>
#include <type_traits>
#include <utility>

namespace pi_hooks {

/// A PiStr borrowing the given text: it does not copy, so the text must outlive the call
/// the PiStr is passed to (the host copies it before returning). Converts to PiStr
/// implicitly, so it can be passed straight to host functions.
struct Str {
    PiStr raw;
    Str(const char *s) noexcept : raw(pi_str(s)) {}
    Str(std::string_view s) noexcept : raw(pi_str_n(s.data(), s.size())) {}
    Str(const std::string &s) noexcept : raw(pi_str_n(s.data(), s.size())) {}
    operator PiStr() const noexcept { return raw; }
};

/// A std::string_view over a PiStr (empty for {NULL, 0}).
inline std::string_view view(PiStr s) noexcept {
    return s.ptr != nullptr ? std::string_view(s.ptr, s.len) : std::string_view();
}

/// A status other than PI_OK, thrown by check(); guard() returns its status.
class Error : public std::runtime_error {
public:
    Error(PiStatus status, const std::string &what) : std::runtime_error(what), status_(status) {}
    PiStatus status() const noexcept { return status_; }

private:
    PiStatus status_;
};

/// Throws Error when `status` is not PI_OK; `what` names the call for the message.
inline void check(PiStatus status, const char *what) {
    if (status != PI_OK)
        throw Error(status, std::string(what) + " failed with status " + std::to_string(status));
}

class OwnedValue;

namespace detail {
#if defined(__GNUC__) || defined(__clang__)
#define PI_HOOKS_HPP_HIDDEN __attribute__((visibility("hidden")))
#else
#define PI_HOOKS_HPP_HIDDEN
#endif
/// The host's tables, set by PI_HOOKS_CPP_PLUGIN (or pi_hooks::Plugin) before setup runs;
/// hidden, so that every plugin library keeps its own.
inline PI_HOOKS_HPP_HIDDEN const PiHostApi *g_host = nullptr;

/// The host's value table; throws when no plugin was set up yet, or when the host is older
/// than ABI 1.2 and `builders` are needed.
inline const PiValueApi *values(bool builders = false) {
    if (g_host == nullptr) throw Error(PI_ERR_UNAVAILABLE, "pi_hooks: no host yet (use PI_HOOKS_CPP_PLUGIN)");
    if (builders && (g_host->abi_minor < 2 || g_host->values->struct_size < sizeof(PiValueApi)))
        throw Error(PI_ERR_UNAVAILABLE, "pi_hooks: building values needs a host of ABI 1.2 or newer");
    return g_host->values;
}

template <class>
inline constexpr bool always_false = false;

/// actions->identity or actions->data_dir (ABI 1.6) of `plugin`: the host's string, valid
/// until the plugin is unloaded. Throws Error (PI_ERR_UNAVAILABLE on an older host).
inline std::string_view own_text(const PiHostApi *host, PiPlugin *plugin, bool data_dir) {
    const PiActionsApi *a = host->actions;
    if (!(data_dir ? PI_HOOKS_HAS(PiActionsApi, a, data_dir) : PI_HOOKS_HAS(PiActionsApi, a, identity)))
        throw Error(PI_ERR_UNAVAILABLE, "pi_hooks: identity and data_dir need a host of ABI 1.6 or newer");
    PiStr out{};
    check(data_dir ? a->data_dir(plugin, &out) : a->identity(plugin, &out),
          data_dir ? "data_dir" : "identity");
    return std::string_view(out.ptr, out.len);
}
}  // namespace detail

/// A read-only view of a host value; cheap to copy. Borrowed: valid as long as the PiValue it
/// views (until the handler returns for event payloads). A view of NULL is "absent": every
/// accessor then answers absent/empty, so lookups chain without checks.
class Value {
public:
    Value(const PiValueApi *api, const PiValue *value) noexcept : api_(api), value_(value) {}

    const PiValue *raw() const noexcept { return value_; }
    /// True when a value is present (even JSON null).
    explicit operator bool() const noexcept { return value_ != nullptr; }
    /// One of PI_VALUE_*.
    uint32_t kind() const noexcept { return api_->kind(value_); }
    bool is_null() const noexcept { return kind() == PI_VALUE_NULL; }

    /// Field `key` of an object.
    Value get(std::string_view key) const noexcept { return {api_, api_->get(value_, Str(key))}; }
    /// The value at a JSON Pointer such as "/input/path".
    Value pointer(std::string_view path) const noexcept {
        return {api_, api_->pointer(value_, Str(path))};
    }
    /// Element `index` of an array.
    Value at(size_t index) const noexcept { return {api_, api_->at(value_, index)}; }
    /// Elements of an array or fields of an object; 0 otherwise.
    size_t len() const noexcept { return api_->len(value_); }

    /// The string (borrowed from the value), or nullopt when this is not a string.
    std::optional<std::string_view> as_string() const noexcept {
        PiStr out{nullptr, 0};
        if (api_->as_str(value_, &out) != PI_OK) return std::nullopt;
        return view(out);
    }
    std::optional<int64_t> as_int() const noexcept {
        int64_t out = 0;
        if (api_->as_int(value_, &out) != PI_OK) return std::nullopt;
        return out;
    }
    std::optional<double> as_float() const noexcept {
        double out = 0;
        if (api_->as_float(value_, &out) != PI_OK) return std::nullopt;
        return out;
    }
    std::optional<bool> as_bool() const noexcept {
        bool out = false;
        if (api_->as_bool(value_, &out) != PI_OK) return std::nullopt;
        return out;
    }
    /// The value as compact JSON (borrowed from the value), or nullopt when absent.
    std::optional<std::string_view> to_json() const noexcept {
        PiStr out{nullptr, 0};
        if (api_->to_json(value_, &out) != PI_OK) return std::nullopt;
        return view(out);
    }
    /// The value as compact JSON, copied; "" when absent.
    std::string json() const { return std::string(to_json().value_or(std::string_view())); }

    /// A deep copy as an owned value that can be changed (ABI 1.2); throws Error when absent.
    inline OwnedValue copy() const;

    /// values->replace_text (ABI 1.3): a copy of this string, or of this content array with
    /// every block's `text` replaced, in which each match of the regular expression
    /// `pattern` (Rust regex syntax) becomes `replacement` (`$1`, `${name}`, `$$`). `*count`
    /// (when given) receives the number of matches. Throws Error when this value is absent or
    /// `pattern` is invalid (the host prints why on stderr).
    inline OwnedValue replace_text(std::string_view pattern, std::string_view replacement,
                                   size_t *count = nullptr) const;

    /// Iterates the elements of an array (nothing for anything else):
    /// `for (pi_hooks::Value block : event.get("content")) ...`
    class iterator {
    public:
        using iterator_category = std::input_iterator_tag;
        using value_type = Value;
        using difference_type = std::ptrdiff_t;
        using pointer = void;
        using reference = Value;
        iterator(const PiValueApi *api, const PiValue *array, size_t index) noexcept
            : api_(api), array_(array), index_(index) {}
        Value operator*() const noexcept { return {api_, api_->at(array_, index_)}; }
        iterator &operator++() noexcept {
            ++index_;
            return *this;
        }
        bool operator==(const iterator &other) const noexcept { return index_ == other.index_; }
        bool operator!=(const iterator &other) const noexcept { return index_ != other.index_; }

    private:
        const PiValueApi *api_;
        const PiValue *array_;
        size_t index_;
    };
    iterator begin() const noexcept { return {api_, value_, 0}; }
    iterator end() const noexcept { return {api_, value_, kind() == PI_VALUE_ARRAY ? len() : 0}; }

private:
    const PiValueApi *api_;
    const PiValue *value_;
};

/// Owns a value the host handed out through a `PiValue **out` parameter and frees it with
/// values->free when destroyed. Move-only.
///
///     pi_hooks::OwnedValue answer(host->values);
///     check(host->ui->input(ctx, Str("Name?"), Str(""), nullptr, answer.out()), "input");
///     if (auto name = answer.view().as_string()) ...
class OwnedValue {
public:
    explicit OwnedValue(const PiValueApi *api, PiValue *value = nullptr) noexcept
        : api_(api), value_(value) {}
    OwnedValue(OwnedValue &&other) noexcept : api_(other.api_), value_(other.release()) {}
    OwnedValue &operator=(OwnedValue &&other) noexcept {
        if (this != &other) {
            reset();
            api_ = other.api_;
            value_ = other.release();
        }
        return *this;
    }
    OwnedValue(const OwnedValue &) = delete;
    OwnedValue &operator=(const OwnedValue &) = delete;
    ~OwnedValue() { reset(); }

    /// Frees the current value (if any) and returns the slot for a host function to fill.
    PiValue **out() noexcept {
        reset();
        return &value_;
    }
    Value view() const noexcept { return {api_, value_}; }
    explicit operator bool() const noexcept { return value_ != nullptr; }
    /// Gives up ownership: the caller must free the value.
    PiValue *release() noexcept { return std::exchange(value_, nullptr); }
    void reset() noexcept {
        if (value_ != nullptr) api_->free(std::exchange(value_, nullptr));
    }

    // ---- Building (ABI 1.2; each throws Error on a host without the builders, as after a
    // refusal). Needs the host pointer that PI_HOOKS_CPP_PLUGIN sets.

    /// A new empty object / array.
    static OwnedValue object() { return made(detail::values(true)->new_object(), "new_object"); }
    static OwnedValue array() { return made(detail::values(true)->new_array(), "new_array"); }
    /// JSON null.
    static OwnedValue null() { return made(detail::values(true)->new_null(), "new_null"); }
    /// Parses JSON text; throws Error when it is not JSON.
    static OwnedValue parse(std::string_view json) {
        OwnedValue out(detail::values());
        check(out.api_->parse(Str(json), out.out()), "parse");
        return out;
    }
    /// A value from a C++ value: a string (std::string, std::string_view, const char *), a
    /// bool, an integer, a floating-point number, a Value (deep copy) or an OwnedValue (moved).
    template <class T>
    static OwnedValue of(T &&x) {
        using D = std::decay_t<T>;
        const PiValueApi *v = detail::values(true);
        if constexpr (std::is_same_v<D, OwnedValue>) {
            return OwnedValue(std::forward<T>(x));
        } else if constexpr (std::is_same_v<D, Value>) {
            return made(v->copy(x.raw()), "copy");
        } else if constexpr (std::is_same_v<D, bool>) {
            return made(v->new_bool(x), "new_bool");
        } else if constexpr (std::is_integral_v<D>) {
            return made(v->new_int(static_cast<int64_t>(x)), "new_int");
        } else if constexpr (std::is_floating_point_v<D>) {
            return made(v->new_float(static_cast<double>(x)), "new_float");
        } else if constexpr (std::is_convertible_v<const T &, std::string_view>) {
            return made(v->new_string(Str(std::string_view(x))), "new_string (not UTF-8?)");
        } else {
            static_assert(detail::always_false<D>, "OwnedValue::of: unsupported type");
        }
    }

    /// Sets field `key` of this object to `x` (anything `of` takes); returns *this, so calls
    /// chain, also on a temporary: `auto o = OwnedValue::object().set("a", 1).set("b", "x");`
    template <class T>
    OwnedValue &set(std::string_view key, T &&x) & {
        OwnedValue item = of(std::forward<T>(x));
        check(api_->set(value_, Str(key), item.release()), "set");
        return *this;
    }
    template <class T>
    OwnedValue &&set(std::string_view key, T &&x) && {
        return std::move(set(key, std::forward<T>(x)));
    }
    /// Appends `x` (anything `of` takes) to this array; returns *this (chains as `set`).
    template <class T>
    OwnedValue &push(T &&x) & {
        OwnedValue item = of(std::forward<T>(x));
        check(api_->push(value_, item.release()), "push");
        return *this;
    }
    template <class T>
    OwnedValue &&push(T &&x) && {
        return std::move(push(std::forward<T>(x)));
    }
    /// Read access, as on a Value: `owned.get("key")`, `owned.len()`, iteration.
    Value get(std::string_view key) const noexcept { return view().get(key); }
    size_t len() const noexcept { return view().len(); }
    Value::iterator begin() const noexcept { return view().begin(); }
    Value::iterator end() const noexcept { return view().end(); }
    std::string json() const { return view().json(); }

private:
    /// Owns what a builder returned; throws Error when it returned NULL.
    static OwnedValue made(PiValue *value, const char *what) {
        if (value == nullptr) throw Error(PI_ERR_INVALID_ARG, std::string(what) + " failed");
        return OwnedValue(detail::g_host->values, value);
    }

    const PiValueApi *api_;
    PiValue *value_;
};

inline OwnedValue Value::copy() const { return OwnedValue::of(*this); }

inline OwnedValue Value::replace_text(std::string_view pattern, std::string_view replacement,
                                      size_t *count) const {
    const PiValueApi *api = detail::values();
    if (detail::g_host->abi_minor < 3)
        throw Error(PI_ERR_UNAVAILABLE, "pi_hooks: replace_text needs a host of ABI 1.3 or newer");
    size_t n = 0;
    PiValue *made = api->replace_text(value_, Str(pattern), Str(replacement), &n);
    if (count != nullptr) *count = n;
    if (made == nullptr) throw Error(PI_ERR_INVALID_ARG, "replace_text failed (absent value or invalid pattern)");
    return OwnedValue(api, made);
}

/// Setters on a handler's result, named as in PiResultApi (no overloads: a literal would pick
/// the wrong one); each throws Error when the host refuses, so use it inside guard().
class Result {
public:
    Result(const PiResultApi *api, PiResult *result) noexcept : api_(api), result_(result) {}

    Result &set_bool(std::string_view key, bool value) {
        check(api_->set_bool(result_, Str(key), value), "set_bool");
        return *this;
    }
    Result &set_int(std::string_view key, int64_t value) {
        check(api_->set_int(result_, Str(key), value), "set_int");
        return *this;
    }
    Result &set_float(std::string_view key, double value) {
        check(api_->set_float(result_, Str(key), value), "set_float");
        return *this;
    }
    Result &set_string(std::string_view key, std::string_view value) {
        check(api_->set_string(result_, Str(key), Str(value)), "set_string");
        return *this;
    }
    /// Field `key` set to a deep copy of `value` (a borrowed or owned value).
    Result &set_value(std::string_view key, Value value) {
        check(api_->set_value(result_, Str(key), value.raw()), "set_value");
        return *this;
    }
    Result &set_json(std::string_view json) {
        check(api_->set_json(result_, Str(json)), "set_json");
        return *this;
    }
    Result &add_text(std::string_view text) {
        check(api_->add_text(result_, Str(text)), "add_text");
        return *this;
    }
    /// Field `key` set to the value parsed from JSON text.
    Result &set_field_json(std::string_view key, std::string_view json) {
        check(api_->set_field_json(result_, Str(key), Str(json)), "set_field_json");
        return *this;
    }
    /// `tool_call`: the tool runs with `input` (a JSON object) instead of the input it was
    /// called with, and later handlers see it (pi's handlers mutate `event.input` in place).
    /// A later handler's block still wins. `result.rewrite_input(R"({"command":"pnpm i"})")`.
    Result &rewrite_input(std::string_view input_json) {
        return set_field_json("input", input_json);
    }
    /// `tool_call`: block the tool with `reason` and ask the agent to stop after this tool
    /// batch (pi 1.6's `terminate`: the run ends when every call of the batch was blocked so).
    Result &block_and_terminate(std::string_view reason) {
        return set_bool("block", true).set_string("reason", reason).set_bool("terminate", true);
    }
    /// `turn_end` / `agent_before_settle` (pi 1.6's boundaries): session entries to append
    /// (a JSON array of drafts such as `{"type":"custom_message","customType":"note",
    /// "content":"...","display":true}`; empty: none) and whether to make one more model
    /// request.
    Result &boundary(std::string_view entries_json, bool continue_run) {
        if (!entries_json.empty()) set_field_json("entries", entries_json);
        return set_bool("continue", continue_run);
    }
    /// Field `key` set to `x`: a string, bool, integer, floating-point number, Value or
    /// OwnedValue (deep-copied; the owned value stays yours), picked by type:
    /// `result.set("block", true).set("reason", "why")`.
    template <class T>
    Result &set(std::string_view key, const T &x) {
        if constexpr (std::is_same_v<T, bool>) {
            return set_bool(key, x);
        } else if constexpr (std::is_integral_v<T>) {
            return set_int(key, static_cast<int64_t>(x));
        } else if constexpr (std::is_floating_point_v<T>) {
            return set_float(key, static_cast<double>(x));
        } else if constexpr (std::is_same_v<T, Value>) {
            return set_value(key, x);
        } else if constexpr (std::is_same_v<T, OwnedValue>) {
            return set_value(key, x.view());
        } else if constexpr (std::is_convertible_v<const T &, std::string_view>) {
            return set_string(key, std::string_view(x));
        } else {
            static_assert(detail::always_false<T>, "Result::set: unsupported type");
        }
    }
    /// Replaces the whole result with a deep copy of `value` (ABI 1.2), for example a plain
    /// string for `input`: `result.assign(OwnedValue::of("new text"))`.
    Result &assign(Value value) {
        if (detail::g_host != nullptr && detail::g_host->abi_minor < 2)
            throw Error(PI_ERR_UNAVAILABLE, "Result::assign needs a host of ABI 1.2 or newer");
        check(api_->set_from_value(result_, value.raw()), "set_from_value");
        return *this;
    }
    Result &assign(const OwnedValue &value) { return assign(value.view()); }

private:
    const PiResultApi *api_;
    PiResult *result_;
};

namespace detail {
/// Runs `f`, mapping a void return to PI_OK; exceptions go to `report(message)`.
template <class F, class Report>
PiStatus run_guarded(F &&f, Report &&report) noexcept {
    try {
        if constexpr (std::is_void_v<std::invoke_result_t<F &&>>) {
            std::forward<F>(f)();
            return PI_OK;
        } else {
            return static_cast<PiStatus>(std::forward<F>(f)());
        }
    } catch (const Error &e) {
        report(e.what());
        return e.status();
    } catch (const std::exception &e) {
        report(e.what());
    } catch (...) {
        report("unknown C++ exception");
    }
    return PI_ERR_PANIC;
}
}  // namespace detail

/// The exception barrier for handlers, commands, tools and timer callbacks: runs `f` (which
/// returns void, meaning PI_OK, or a PiStatus) and returns its status. An exception never
/// leaves: pi_hooks::Error returns its status, anything else PI_ERR_PANIC ("threw (C++) and
/// the barrier caught it"); either way the message goes to host->context->set_error(ctx, ...)
/// so that the host reports it. In tool_call an error blocks the tool (fails closed).
template <class F>
PiStatus guard(const PiHostApi *host, PiContext *ctx, F &&f) noexcept {
    return detail::run_guarded(std::forward<F>(f), [&](const char *message) noexcept {
        if (host != nullptr && ctx != nullptr) host->context->set_error(ctx, pi_str(message));
    });
}

/// The exception barrier for init: as guard(), but reports through
/// host->registry->set_init_error, so the host shows why the plugin failed to load.
template <class F>
PiStatus guard_init(const PiHostApi *host, PiPlugin *plugin, F &&f) noexcept {
    return detail::run_guarded(std::forward<F>(f), [&](const char *message) noexcept {
        if (host != nullptr) host->registry->set_init_error(plugin, pi_str(message));
    });
}

/// The context of one handler, command or tool call: valid until that call returns, on its
/// thread. The helpers throw Error when the host refuses (use them inside guard(), which
/// every lambda registered through Plugin already is).
class Context {
public:
    Context(const PiHostApi *host, PiContext *raw) noexcept : host_(host), raw_(raw) {}
    PiContext *raw() const noexcept { return raw_; }
    const PiHostApi *host() const noexcept { return host_; }
    /// The session's working directory.
    std::string_view cwd() const noexcept { return view(host_->context->cwd(raw_)); }
    /// Whether dialogs reach a user (false in print and JSON modes).
    bool has_ui() const noexcept { return host_->context->has_ui(raw_); }
    /// One of PI_MODE_*.
    uint32_t mode() const noexcept { return host_->context->mode(raw_); }
    /// Whether the agent's current run was aborted (pi's ctx.signal.aborted), for a long
    /// handler to stop early (ABI 1.4; false on an older host).
    bool is_aborted() const noexcept {
        if (host_->context->struct_size <
            offsetof(PiContextApi, is_aborted) + sizeof host_->context->is_aborted)
            return false;
        return host_->context->is_aborted(raw_);
    }
    /// Who this plugin is: "package:<name>" or "library:<canonical path>" (ABI 1.6; throws
    /// Error on an older host). Valid until the plugin is unloaded.
    std::string_view identity() const {
        return detail::own_text(host_, host_->context->plugin(raw_), false);
    }
    /// This plugin's own folder (`${data}`), created 0700 on the first ask (ABI 1.6; throws
    /// Error on an older host, PI_ERR_DENIED when a confined plugin's grant names no ${data}).
    std::string_view data_dir() const {
        return detail::own_text(host_, host_->context->plugin(raw_), true);
    }
    /// Whether project-local trust is active (pi's ctx.isProjectTrusted(); ABI 1.7, false
    /// on an older host): inside pi, pi's answer; in pi-hooks' own modes, the host's.
    bool is_project_trusted() const noexcept {
        if (host_->context->struct_size <
            offsetof(PiContextApi, is_project_trusted) + sizeof host_->context->is_project_trusted)
            return false;
        return host_->context->is_project_trusted(raw_);
    }
    /// The thinking level (pi's ctx.thinkingLevel): "off" in pi-hooks' own modes and on a
    /// host older than ABI 1.7. Valid until this call returns.
    std::string_view thinking_level() const noexcept {
        if (host_->context->struct_size <
            offsetof(PiContextApi, thinking_level) + sizeof host_->context->thinking_level)
            return "off";
        return view(host_->context->thinking_level(raw_));
    }
    /// (Command handlers; ABI 1.7) The options the base system prompt is built from (pi's
    /// ctx.getSystemPromptOptions()): {cwd, selectedTools?, ...}. Throws Error elsewhere
    /// (PI_ERR_UNAVAILABLE) and on an older host.
    OwnedValue system_prompt_options() const {
        if (host_->context->struct_size <
            offsetof(PiContextApi, system_prompt_options) + sizeof host_->context->system_prompt_options)
            check(PI_ERR_UNAVAILABLE, "system_prompt_options");
        OwnedValue out(host_->values);
        check(host_->context->system_prompt_options(raw_, out.out()), "system_prompt_options");
        return out;
    }
    /// Sets a widget of `lines` under `key`, with no placement given (pi's plain
    /// setWidget(key, lines): above the editor, and RPC names no placement); pass
    /// PI_WIDGET_ABOVE_EDITOR or PI_WIDGET_BELOW_EDITOR to name one (PI_WIDGET_DEFAULT needs
    /// ABI 1.7).
    void set_widget(std::string_view key, const std::vector<std::string_view> &lines,
                    uint32_t placement = PI_WIDGET_DEFAULT) const {
        std::vector<PiStr> raw;
        raw.reserve(lines.size());
        for (std::string_view line : lines) raw.push_back(Str(line));
        check(host_->ui->set_widget(raw_, Str(key), raw.data(), raw.size(), placement), "set_widget");
    }
    /// Removes the widget under `key`.
    void remove_widget(std::string_view key) const {
        check(host_->ui->set_widget(raw_, Str(key), nullptr, 0, PI_WIDGET_DEFAULT), "set_widget");
    }
    /// A notification (PI_NOTIFY_INFO, _WARNING or _ERROR); dropped where there is no UI.
    void notify(std::string_view message, uint32_t level = PI_NOTIFY_INFO) const {
        check(host_->ui->notify(raw_, Str(message), level), "notify");
    }
    /// The status line entry `key`.
    void set_status(std::string_view key, std::string_view text) const {
        check(host_->ui->set_status(raw_, Str(key), Str(text)), "set_status");
    }

private:
    const PiHostApi *host_;
    PiContext *raw_;
};

/// A tool for Plugin::tool: the name the model calls, a label (may be empty), the
/// description the model reads, and the parameters as JSON Schema text (empty: any object).
struct ToolSpec {
    std::string_view name;
    std::string_view label;
    std::string_view description;
    std::string_view parameters_json;
};

namespace detail {
/// Keeps `f` on the heap until the plugin is retired (a cleanup deletes it); returns it.
template <class F>
F *keep(const PiHostApi *host, PiPlugin *plugin, F &&f) {
    using D = std::decay_t<F>;
    D *stored = new D(std::forward<F>(f));
    PiStatus status = host->registry->add_cleanup(
        plugin, [](void *data) { delete static_cast<D *>(data); }, stored);
    if (status != PI_OK) {
        delete stored;
        check(status, "add_cleanup");
    }
    return stored;
}

template <class F>
PiStatus event_trampoline(void *ud, const PiValue *event, PiContext *ctx, PiResult *result) noexcept {
    return guard(g_host, ctx, [&] {
        Context c(g_host, ctx);
        Result r(g_host->results, result);
        return (*static_cast<F *>(ud))(Value(g_host->values, event), c, r);
    });
}

template <class F>
PiStatus command_trampoline(void *ud, PiStr args, PiContext *ctx) noexcept {
    return guard(g_host, ctx, [&] {
        Context c(g_host, ctx);
        return (*static_cast<F *>(ud))(view(args), c);
    });
}

template <class F>
PiStatus tool_trampoline(void *ud, PiStr, const PiValue *params, PiContext *ctx, PiResult *result) noexcept {
    return guard(g_host, ctx, [&] {
        Context c(g_host, ctx);
        Result r(g_host->results, result);
        return (*static_cast<F *>(ud))(Value(g_host->values, params), c, r);
    });
}
}  // namespace detail

/// Registration with lambdas, handed to the setup function of PI_HOOKS_CPP_PLUGIN (during
/// init: registration works only there). Each lambda is kept until the plugin is retired and
/// runs behind guard(): return nothing (PI_OK) or a PiStatus; an exception becomes the call's
/// error (Error keeps its status, anything else is PI_ERR_PANIC) with what() as the message.
/// A registration the host refuses throws Error, which fails init with that message.
class Plugin {
public:
    Plugin(const PiHostApi *host, PiPlugin *raw) noexcept : host_(host), raw_(raw) {
        detail::g_host = host;
    }
    const PiHostApi *host() const noexcept { return host_; }
    PiPlugin *raw() const noexcept { return raw_; }

    /// `handler(pi_hooks::Value event, pi_hooks::Context &ctx, pi_hooks::Result &result)` for
    /// every `event` (for example "tool_call"); leave `result` empty to return nothing.
    template <class F>
    Plugin &on(std::string_view event, F &&handler) {
        using D = std::decay_t<F>;
        D *stored = detail::keep(host_, raw_, std::forward<F>(handler));
        check(host_->registry->on(raw_, Str(event), detail::event_trampoline<D>, stored), "on");
        return *this;
    }
    /// The slash command `/name`: `handler(std::string_view args, pi_hooks::Context &ctx)`.
    template <class F>
    Plugin &command(std::string_view name, std::string_view description, F &&handler) {
        using D = std::decay_t<F>;
        D *stored = detail::keep(host_, raw_, std::forward<F>(handler));
        PiCommandDef def{};
        def.struct_size = sizeof def;
        def.name = Str(name);
        def.description = Str(description);
        def.handler = detail::command_trampoline<D>;
        def.user_data = stored;
        check(host_->registry->register_command(raw_, &def), "register_command");
        return *this;
    }
    /// A tool: `execute(pi_hooks::Value params, pi_hooks::Context &ctx, pi_hooks::Result &r)`
    /// fills `r` (`add_text`, `set("details", ...)`, `set("isError", true)`).
    template <class F>
    Plugin &tool(const ToolSpec &spec, F &&execute) {
        using D = std::decay_t<F>;
        D *stored = detail::keep(host_, raw_, std::forward<F>(execute));
        PiToolDef def{};
        def.struct_size = sizeof def;
        def.name = Str(spec.name);
        def.label = Str(spec.label);
        def.description = Str(spec.description);
        def.parameters_json = Str(spec.parameters_json);
        def.execute = detail::tool_trampoline<D>;
        def.user_data = stored;
        check(host_->registry->register_tool(raw_, &def), "register_tool");
        return *this;
    }
    /// A line in the host's log (PI_LOG_*).
    void log(uint32_t level, std::string_view message) const {
        host_->actions->log(raw_, level, Str(message));
    }
    /// Who this plugin is, already during setup (see Context::identity).
    std::string_view identity() const { return detail::own_text(host_, raw_, false); }
    /// This plugin's own folder, already during setup (see Context::data_dir).
    std::string_view data_dir() const { return detail::own_text(host_, raw_, true); }

private:
    const PiHostApi *host_;
    PiPlugin *raw_;
};

}  // namespace pi_hooks

/// The entry point of a C++ plugin: defines init, which runs `setup_fn(pi_hooks::Plugin &)`
/// behind guard_init (an exception fails the load with its message), and the descriptor
/// (as PI_HOOKS_PLUGIN; `name`, `version` and `description` are string literals). Once per
/// library, at file scope: `PI_HOOKS_CPP_PLUGIN("my-plugin", "1.0.0", "What it does", setup);`
#define PI_HOOKS_CPP_PLUGIN(name, version, description, setup_fn)                             \
    static PiStatus pi_hooks_cpp_init_(const PiHostApi *host, PiPlugin *plugin) {            \
        return ::pi_hooks::guard_init(host, plugin, [&] {                                     \
            ::pi_hooks::Plugin pi(host, plugin);                                              \
            setup_fn(pi);                                                                     \
        });                                                                                   \
    }                                                                                         \
    PI_HOOKS_PLUGIN(name, version, description, pi_hooks_cpp_init_, nullptr)

#endif  // PI_HOOKS_HPP
