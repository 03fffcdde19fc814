//! ISO-8601 timestamps as JavaScript writes and reads them, through the `jiff` crate.
//!
//! pi stamps entries with `new Date().toISOString()` (`2026-01-24T16:22:26.831Z`: UTC,
//! milliseconds, `Z`) and turns them back into milliseconds with `new Date(s).getTime()` when it
//! builds the model's context. Years are those jiff represents (-9999 to 9999); JavaScript's
//! extended years (`+010000-...`) are out of reach, and never met in session files.

use jiff::Timestamp;
use jiff::civil::{Date, DateTime};
use jiff::tz::TimeZone;

/// Milliseconds since the Unix epoch, now (as JavaScript's `Date.now()`).
pub fn now_millis() -> i64 {
    Timestamp::now().as_millisecond()
}

/// Now, as JavaScript's `new Date().toISOString()`.
pub fn now_iso() -> String {
    format_iso_millis(now_millis())
}

/// `YYYY-MM-DDTHH:MM:SS.sssZ` for a time in milliseconds since the Unix epoch, as JavaScript's
/// `toISOString`. A time outside jiff's range (years -9999 to 9999) is clamped to it.
pub fn format_iso_millis(millis: i64) -> String {
    let time = Timestamp::from_millisecond(millis).unwrap_or(if millis < 0 {
        Timestamp::MIN
    } else {
        Timestamp::MAX
    });
    time.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// Milliseconds since the Unix epoch for an ISO-8601 date-time, as JavaScript's
/// `new Date(s).getTime()` reads the forms pi writes: `YYYY-MM-DD`, optionally followed by
/// `THH:MM`, `:SS`, a fraction, and `Z` or `+HH:MM` / `-HH:MM`. `None` where JavaScript would give
/// `NaN`. (A date-time without a zone is read as UTC here; JavaScript would use local time.)
/// Digits past the milliseconds are dropped, as JavaScript drops them.
pub fn parse_iso_millis(text: &str) -> Option<i64> {
    let millis = |time: Timestamp| {
        let whole = time.as_second() * 1000;
        whole + i64::from(time.subsec_millisecond())
    };
    if text.ends_with(['Z', 'z']) || text.len() > 10 && text[10..].contains(['+', '-']) {
        return text.parse::<Timestamp>().ok().map(millis);
    }
    if text.len() == 10 {
        let date: Date = text.parse().ok()?;
        return date
            .to_zoned(TimeZone::UTC)
            .ok()
            .map(|z| millis(z.timestamp()));
    }
    let civil: DateTime = text.parse().ok()?;
    civil
        .to_zoned(TimeZone::UTC)
        .ok()
        .map(|z| millis(z.timestamp()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_as_javascript_to_iso_string() {
        assert_eq!(format_iso_millis(0), "1970-01-01T00:00:00.000Z");
        // new Date(1769271746831).toISOString()
        assert_eq!(
            format_iso_millis(1_769_271_746_831),
            "2026-01-24T16:22:26.831Z"
        );
        assert_eq!(
            format_iso_millis(951_782_400_000),
            "2000-02-29T00:00:00.000Z"
        );
        assert_eq!(format_iso_millis(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(now_iso().len(), 24);
    }

    #[test]
    fn parses_what_it_formats_and_common_variants() {
        for millis in [0, 1_769_271_746_831, 951_782_400_000, -1, 4_102_444_799_999] {
            assert_eq!(parse_iso_millis(&format_iso_millis(millis)), Some(millis));
        }
        assert_eq!(parse_iso_millis("2026-01-24"), Some(1_769_212_800_000));
        assert_eq!(
            parse_iso_millis("2026-01-24T16:22:26Z"),
            Some(1_769_271_746_000)
        );
        assert_eq!(
            parse_iso_millis("2026-01-24T16:22:26.8Z"),
            Some(1_769_271_746_800)
        );
        assert_eq!(
            parse_iso_millis("2026-01-24T16:22:26.831999Z"),
            Some(1_769_271_746_831)
        );
        assert_eq!(
            parse_iso_millis("2026-01-24T18:22:26.831+02:00"),
            Some(1_769_271_746_831)
        );
        assert_eq!(
            parse_iso_millis("2026-01-24T16:22Z"),
            Some(1_769_271_720_000)
        );
        for bad in [
            "",
            "yesterday",
            "2026-13-01",
            "2026-02-30",
            "2026-01-24T25:00Z",
            "2026-01-24Tx",
        ] {
            assert_eq!(parse_iso_millis(bad), None, "{bad}");
        }
    }
}
