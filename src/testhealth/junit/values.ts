/**
 * Readers for JUnit attribute values as real producers write them. None of them throws: a value
 * we cannot read becomes null, because one odd attribute must not cost the whole report.
 */
import { MINUTE_MS } from "../../lib/time.js";

/** Cuts `text` to `limit` characters without splitting a surrogate pair. */
export function truncate(text: string, limit: number): string {
  if (text.length <= limit) return text;
  const cut = text.charCodeAt(limit - 1);
  const endsInsidePair = cut >= 0xd800 && cut <= 0xdbff;
  return text.slice(0, endsInsidePair ? limit - 1 : limit);
}

/** `"1,234.5"`: a thousands separator (seen in the corpus) rather than a decimal comma. */
const THOUSANDS_GROUPED = /^\d{1,3}(?:,\d{3})+(?:\.\d*)?$/;

/**
 * Seconds (`"0.683"`, `"0."`, `"1.7e-05"`, `"1,234.5"`) to milliseconds, rounded to the microsecond
 * so that float noise does not show. Negative times (seen in the corpus) are not durations: null.
 */
export function parseDurationMs(raw: string | undefined): number | null {
  if (raw === undefined) return null;
  let text = raw.trim();
  if (THOUSANDS_GROUPED.test(text)) text = text.replaceAll(",", "");
  if (!/^[+]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/.test(text)) return null;
  const seconds = Number(text);
  if (!Number.isFinite(seconds)) return null;
  return Math.round(seconds * 1_000_000) / 1_000;
}

/** A positive decimal integer (`line` attribute); anything else is null. */
export function parseLineNumber(raw: string | undefined): number | null {
  if (raw === undefined || !/^\s*\d+\s*$/.test(raw)) return null;
  const line = Number(raw);
  return Number.isSafeInteger(line) ? line : null;
}

// 2024-01-03 | 2024-01-03T12:40:13 | 2024-01-03 12:40:13Z | 2024-01-03T 12:40:13 |
// 2021-03-07T10:36:56 UTC | 2021-04-01T10:52:37.000-08:00 | ...T10:00:00.123456789Z
const ISO_LIKE =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ]\s*(\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?\s*(Z|UTC|GMT|[+-]\d{2}(?::?\d{2})?)?)?$/i;
// Sat, 03 Dec 2022 23:10:07 GMT | 03 Jun 2023 10:00:00 +0200
const RFC_1123 =
  /^(?:[A-Za-z]{3},?\s+)?(\d{1,2})\s+([A-Za-z]{3})\s+(\d{4})\s+(\d{2}):(\d{2})(?::(\d{2}))?\s*(GMT|UTC|Z|[+-]\d{2}:?\d{2})$/i;
const EPOCH_NUMBER = /^\d+(?:\.\d+)?$/;
const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];

/**
 * A `timestamp` attribute to epoch milliseconds. Accepted shapes: ISO 8601 with or without time,
 * fraction and offset (a missing offset is read as UTC: the producer's zone is unknowable and CI
 * machines mostly run in UTC), RFC 1123 dates, and epoch numbers (seconds from 2001 on, or
 * milliseconds). Anything else, including impossible dates, is null.
 */
export function parseTimestampMs(raw: string | undefined): number | null {
  if (raw === undefined) return null;
  const text = raw.trim();
  return parseIsoLike(text) ?? parseRfc1123(text) ?? parseEpochNumber(text);
}

function parseIsoLike(text: string): number | null {
  const m = ISO_LIKE.exec(text);
  if (m === null) return null;
  const [, year, month, day, hour, minute, second, fraction, zone] = m;
  const millis = fraction === undefined ? 0 : Math.floor(Number(`0.${fraction}`) * 1000);
  return utcMillis(
    { year: Number(year), month: Number(month), day: Number(day) },
    { hour: Number(hour ?? 0), minute: Number(minute ?? 0), second: Number(second ?? 0), millis },
    zoneOffsetMinutes(zone),
  );
}

function parseRfc1123(text: string): number | null {
  const m = RFC_1123.exec(text);
  if (m === null) return null;
  const [, day, monthName, year, hour, minute, second, zone] = m;
  const month = MONTHS.indexOf((monthName ?? "").toLowerCase()) + 1;
  if (month === 0) return null;
  return utcMillis(
    { year: Number(year), month, day: Number(day) },
    { hour: Number(hour), minute: Number(minute), second: Number(second ?? 0), millis: 0 },
    zoneOffsetMinutes(zone),
  );
}

/** Epoch seconds in [1e9, 1e11) (2001..5138) or epoch milliseconds in [1e11, 1e14); small numbers are durations, not dates. */
function parseEpochNumber(text: string): number | null {
  if (!EPOCH_NUMBER.test(text)) return null;
  const value = Number(text);
  if (value >= 1e9 && value < 1e11) return Math.round(value * 1000);
  if (value >= 1e11 && value < 1e14) return Math.round(value);
  return null;
}

/** Minutes east of UTC; no zone, `Z`, `UTC` and `GMT` are 0. */
function zoneOffsetMinutes(zone: string | undefined): number | null {
  if (zone === undefined || /^(?:Z|UTC|GMT)$/i.test(zone)) return 0;
  const m = /^([+-])(\d{2}):?(\d{2})?$/.exec(zone);
  if (m === null) return null;
  const [, sign, hours, minutes] = m;
  const offset = Number(hours) * 60 + Number(minutes ?? 0);
  return sign === "-" ? -offset : offset;
}

interface CalendarDate {
  year: number;
  month: number;
  day: number;
}
interface ClockTime {
  hour: number;
  minute: number;
  second: number;
  millis: number;
}

function utcMillis(
  date: CalendarDate,
  time: ClockTime,
  offsetMinutes: number | null,
): number | null {
  if (offsetMinutes === null) return null;
  if (time.hour > 23 || time.minute > 59 || time.second > 60) return null;
  const local = Date.UTC(date.year, date.month - 1, date.day, time.hour, time.minute, time.second);
  // Date.UTC rolls 31 February over into March; a report claiming that date is not trusted.
  const check = new Date(local);
  if (check.getUTCMonth() !== date.month - 1 || check.getUTCDate() !== date.day) return null;
  return local + time.millis - offsetMinutes * MINUTE_MS;
}
