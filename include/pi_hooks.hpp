/*
 * pi_hooks.hpp: small header-only C++17 helpers over pi_hooks.h. Written by hand (not
 * generated); it adds no ABI, only conveniences around the C types:
 *
 *   pi_hooks::Str          a PiStr from a std::string_view, std::string or C string
 *   pi_hooks::view         a std::string_view over a PiStr
 *   pi_hooks::Value        a read-only view of a PiValue (get, pointer, at, as_string ...)
 *   pi_hooks::OwnedValue   owns a PiValue the host handed out; frees it with values->free
 *   pi_hooks::Result       setters on the PiResult of a handler
 *   pi_hooks::Error/check  a non-PI_OK status as an exception
 *   pi_hooks::guard        the exception barrier every callback must go through
 *
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
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
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

private:
    const PiValueApi *api_;
    PiValue *value_;
};

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

}  // namespace pi_hooks

#endif  // PI_HOOKS_HPP
