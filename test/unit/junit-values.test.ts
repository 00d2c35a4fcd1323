import { describe, expect, it } from "vitest";
import {
  parseDurationMs,
  parseLineNumber,
  parseTimestampMs,
  truncate,
} from "../../src/testhealth/junit/values.js";

describe("JUnit durations", () => {
  it.each([
    ["0.683", 683],
    ["0.", 0],
    ["0", 0],
    ["12", 12_000],
    ["1.7e-05", 0.017],
    ["4.5e-05", 0.045],
    ["1,234.5", 1_234_500],
    [" 2.5 ", 2_500],
  ])("reads %j seconds as %d ms", (raw, ms) => {
    expect(parseDurationMs(raw)).toBe(ms);
  });

  it.each([undefined, "", "-0.5", "-3", "abc", "<<computed>>", "1,5", "NaN", "Infinity"])(
    "gives null for %j",
    (raw) => {
      expect(parseDurationMs(raw)).toBeNull();
    },
  );
});

describe("JUnit timestamps", () => {
  const utc = (iso: string) => Date.parse(iso);

  it.each([
    ["2024-01-03T12:27:11", "2024-01-03T12:27:11Z"], // no offset: read as UTC
    ["2024-01-03T12:27:11Z", "2024-01-03T12:27:11Z"],
    ["2024-01-03 12:27:54Z", "2024-01-03T12:27:54Z"],
    ["2024-01-03T 12:40:13", "2024-01-03T12:40:13Z"],
    ["2021-03-07T10:36:56 UTC", "2021-03-07T10:36:56Z"],
    ["2024-01-03", "2024-01-03T00:00:00Z"],
    ["2024-01-03T12:27:11.21-01:00", "2024-01-03T13:27:11.210Z"],
    ["2021-04-01T10:52:37.000-08:00", "2021-04-01T18:52:37Z"],
    ["2024-01-03T12:27:15+01:00", "2024-01-03T11:27:15Z"],
    ["2023-05-01T10:00:00.123456789Z", "2023-05-01T10:00:00.123Z"],
    ["2023-05-01T10:00:00.1234567", "2023-05-01T10:00:00.123Z"],
    ["2023-05-01T10:00:00+0530", "2023-05-01T04:30:00Z"],
    ["Sat, 03 Dec 2022 23:10:07 GMT", "2022-12-03T23:10:07Z"],
    ["03 Jun 2023 10:00:00 GMT", "2023-06-03T10:00:00Z"],
    ["1700000000", "2023-11-14T22:13:20Z"], // epoch seconds
    ["1700000000123", "2023-11-14T22:13:20.123Z"], // epoch milliseconds
  ])("reads %j", (raw, iso) => {
    expect(parseTimestampMs(raw)).toBe(utc(iso));
  });

  it.each([
    undefined,
    "",
    "YYYY-MM-DDTHH:MM:SS",
    "2421.447", // a duration in a timestamp attribute, not a date
    "2023-02-31T10:00:00",
    "2023-13-01",
    "2023-01-01T25:00:00",
    "yesterday",
    "03 Foo 2023 10:00:00 GMT",
  ])("gives null for %j", (raw) => {
    expect(parseTimestampMs(raw)).toBeNull();
  });
});

describe("small readers", () => {
  it("reads line numbers", () => {
    expect(parseLineNumber("42")).toBe(42);
    expect(parseLineNumber("4.2")).toBeNull();
    expect(parseLineNumber(undefined)).toBeNull();
  });

  it("truncates without splitting a surrogate pair", () => {
    expect(truncate("abcdef", 3)).toBe("abc");
    expect(truncate("ab😀cd", 3)).toBe("ab");
    expect(truncate("ab😀cd", 4)).toBe("ab😀");
    expect(truncate("abc", 3)).toBe("abc");
  });
});
