//! ISO-8601 timestamps as JavaScript writes and reads them.
//!
//! pi stamps entries with `new Date().toISOString()` (`2026-01-24T16:22:26.831Z`: UTC,
//! milliseconds, `Z`) and turns them back into milliseconds with `new Date(s).getTime()` when it
//! builds the model's context. Both directions are small enough to do here without a date crate.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, now (negative before 1970, as JavaScript's `Date.now()`).
pub fn now_millis() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_millis()).unwrap_or(i64::MAX),
        Err(before) => -i64::try_from(before.duration().as_millis()).unwrap_or(i64::MAX),
    }
}

/// Now, as JavaScript's `new Date().toISOString()`.
pub fn now_iso() -> String {
    format_iso_millis(now_millis())
}

/// `YYYY-MM-DDTHH:MM:SS.sssZ` for a time in milliseconds since the Unix epoch, as JavaScript's
/// `toISOString` (years outside 0..=9999 are written `+YYYYYY` / `-YYYYYY`, as there).
pub fn format_iso_millis(millis: i64) -> String {
    let days = millis.div_euclid(86_400_000);
    let in_day = millis.rem_euclid(86_400_000);
    let (year, month, day) = civil_from_days(days);
    let (hour, minute) = (in_day / 3_600_000, in_day / 60_000 % 60);
    let (second, milli) = (in_day / 1000 % 60, in_day % 1000);
    let year = if (0..=9999).contains(&year) {
        format!("{year:04}")
    } else if year < 0 {
        format!("-{:06}", -year)
    } else {
        format!("+{year:06}")
    };
    format!("{year}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{milli:03}Z")
}

/// Milliseconds since the Unix epoch for an ISO-8601 date-time, as JavaScript's
/// `new Date(s).getTime()` reads the forms pi writes: `YYYY-MM-DD`, optionally followed by
/// `THH:MM`, `:SS`, a fraction, and `Z` or `+HH:MM` / `-HH:MM`. `None` where JavaScript would give
/// `NaN`. (A date-time without a zone is read as UTC here; JavaScript would use local time.)
pub fn parse_iso_millis(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    let mut at = 0;
    let year = match bytes.first()? {
        b'+' | b'-' => {
            let digits = number(bytes, 1, 6)?;
            at = 7;
            if bytes[0] == b'-' { -digits } else { digits }
        }
        _ => {
            at += 4;
            number(bytes, 0, 4)?
        }
    };
    expect(bytes, at, b'-')?;
    let month = number(bytes, at + 1, 2)?;
    expect(bytes, at + 3, b'-')?;
    let day = number(bytes, at + 4, 2)?;
    at += 6;
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    let mut millis = days_from_civil(year, month, day) * 86_400_000;
    if at == bytes.len() {
        return Some(millis);
    }
    expect(bytes, at, b'T')?;
    let hour = number(bytes, at + 1, 2)?;
    expect(bytes, at + 3, b':')?;
    let minute = number(bytes, at + 4, 2)?;
    at += 6;
    let mut second = 0;
    let mut fraction = 0;
    if bytes.get(at) == Some(&b':') {
        second = number(bytes, at + 1, 2)?;
        at += 3;
        if bytes.get(at) == Some(&b'.') {
            let start = at + 1;
            at = start;
            while bytes.get(at).is_some_and(u8::is_ascii_digit) {
                at += 1;
            }
            if at == start {
                return None;
            }
            // Milliseconds: the first three digits, padded (JavaScript truncates the rest).
            let digits = &text[start..at.min(start + 3)];
            fraction = digits.parse::<i64>().ok()? * 10_i64.pow(3 - digits.len() as u32);
        }
    }
    let valid = hour < 24 && minute < 60 && second < 60 || hour == 24 && minute == 0 && second == 0;
    if !valid {
        return None;
    }
    millis += ((hour * 60 + minute) * 60 + second) * 1000 + fraction;
    match bytes.get(at) {
        None | Some(b'Z') if at + 1 >= bytes.len() => Some(millis),
        Some(sign @ (b'+' | b'-')) => {
            let offset_hours = number(bytes, at + 1, 2)?;
            expect(bytes, at + 3, b':')?;
            let offset_minutes = number(bytes, at + 4, 2)?;
            if at + 6 != bytes.len() || offset_hours > 23 || offset_minutes > 59 {
                return None;
            }
            let offset = (offset_hours * 60 + offset_minutes) * 60_000;
            Some(if *sign == b'+' {
                millis - offset
            } else {
                millis + offset
            })
        }
        _ => None,
    }
}

fn number(bytes: &[u8], at: usize, len: usize) -> Option<i64> {
    let digits = bytes.get(at..at + len)?;
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(digits.iter().fold(0, |n, d| n * 10 + i64::from(d - b'0')))
}

fn expect(bytes: &[u8], at: usize, byte: u8) -> Option<()> {
    (bytes.get(at) == Some(&byte)).then_some(())
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 for a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The proleptic Gregorian date of a day counted from 1970-01-01 (`civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let days = days + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
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
        assert_eq!(
            format_iso_millis(253_402_300_800_000),
            "+010000-01-01T00:00:00.000Z"
        );
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
