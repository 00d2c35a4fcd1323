import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import {
  JunitParseError,
  TEXT_LIMIT,
  parseJunit,
  parseJunitText,
  type ParsedTestCase,
} from "../../src/testhealth/junit/index.js";

async function rejection(input: string | Uint8Array): Promise<string> {
  try {
    await parseJunitText(input);
  } catch (error) {
    if (error instanceof JunitParseError) return error.reason;
    throw error;
  }
  throw new Error("expected a JunitParseError");
}

async function only(xml: string): Promise<ParsedTestCase> {
  const cases = await parseJunitText(xml);
  expect(cases).toHaveLength(1);
  const [testCase] = cases;
  if (testCase === undefined) throw new Error("no test case");
  return testCase;
}

const suite = (body: string, attributes = 'name="S"') =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites><testsuite ${attributes}>${body}</testsuite></testsuites>`;

describe("parseJunit: test cases and status", () => {
  it("reads a passing testcase with its identity fields", async () => {
    const testCase = await only(
      suite(
        '<testcase name="adds" classname="math.Add" file="math.py" line="12" id="x1" time="0.5"/>',
      ),
    );
    expect(testCase).toEqual({
      name: "adds",
      classname: "math.Add",
      parent: "S",
      file: "math.py",
      line: 12,
      idAttribute: "x1",
      attempts: [
        {
          status: "passed",
          kind: "final",
          durationMs: 500,
          startedAt: null,
          failure: null,
          systemOut: null,
          systemErr: null,
        },
      ],
    });
  });

  it("takes the status from the first failure/error/skipped child", async () => {
    const cases = await parseJunitText(
      suite(
        '<testcase name="f"><failure message="m" type="T">trace</failure><skipped/></testcase>' +
          '<testcase name="e"><error message="boom">stack</error></testcase>' +
          '<testcase name="s"><skipped message="later"/><failure message="ignored"/></testcase>' +
          '<testcase name="two"><failure message="first"/><failure message="second"/></testcase>',
      ),
    );
    expect(cases.map((c) => c.attempts.map((a) => a.status))).toEqual([
      ["failed"],
      ["failed"],
      ["skipped"],
      ["failed"],
    ]);
    expect(cases[0]?.attempts[0]?.failure).toEqual({ type: "T", message: "m", text: "trace" });
    expect(cases[1]?.attempts[0]?.failure).toEqual({ type: null, message: "boom", text: "stack" });
    expect(cases[2]?.attempts[0]?.failure).toBeNull();
    expect(cases[3]?.attempts[0]?.failure?.message).toBe("first");
  });

  it("reads testcase-level system-out and system-err, ignoring suite-level output", async () => {
    const testCase = await only(
      suite(
        '<system-out>suite out</system-out><testcase name="t"><system-out>out 1</system-out>' +
          "<system-err><![CDATA[err <raw>]]></system-err></testcase>",
      ),
    );
    expect(testCase.attempts[0]?.systemOut).toBe("out 1");
    expect(testCase.attempts[0]?.systemErr).toBe("err <raw>");
  });

  it("reads testcase properties (value attribute or text)", async () => {
    const testCase = await only(
      suite(
        '<testcase name="t"><properties><property name="a" value="1"/>' +
          '<property name="b">two</property></properties></testcase>',
      ),
    );
    expect(testCase.properties).toEqual({ a: "1", b: "two" });
  });

  it("gives missing attributes as empty strings or null", async () => {
    const testCase = await only("<testsuite><testcase/></testsuite>");
    expect(testCase).toMatchObject({
      name: "",
      classname: "",
      parent: "",
      file: null,
      line: null,
      idAttribute: null,
    });
  });
});

describe("parseJunit: retries inside one testcase", () => {
  it("turns flakyFailure/flakyError into failed attempts before the final pass", async () => {
    const testCase = await only(
      suite(`<testcase name="t" time="1.5" timestamp="2024-01-01T00:00:00Z">
        <flakyFailure message="first" type="AssertionError"><stackTrace>at A</stackTrace>
          <system-out>o1</system-out><system-err>e1</system-err></flakyFailure>
        <flakyError message="second" time="0.25" timestamp="2023-12-31T23:59:00Z">own text</flakyError>
      </testcase>`),
    );
    expect(testCase.attempts.map((a) => [a.kind, a.status])).toEqual([
      ["flaky", "failed"],
      ["flaky", "failed"],
      ["final", "passed"],
    ]);
    const [first, second, final] = testCase.attempts;
    expect(first).toEqual({
      status: "failed",
      kind: "flaky",
      durationMs: null,
      startedAt: Date.parse("2024-01-01T00:00:00Z"), // inherited from the testcase
      failure: { type: "AssertionError", message: "first", text: "at A" },
      systemOut: "o1",
      systemErr: "e1",
    });
    expect(second?.failure?.text).toBe("own text");
    expect(second?.durationMs).toBe(250);
    expect(second?.startedAt).toBe(Date.parse("2023-12-31T23:59:00Z"));
    expect(final?.durationMs).toBe(1500);
    expect(final?.systemOut).toBeNull(); // the retry's output is not the testcase's
  });

  it("turns rerunFailure/rerunError into extra failed attempts of a failing test", async () => {
    const testCase = await only(
      suite(`<testcase name="t"><failure message="main"/>
        <rerunFailure message="r1" type="X"><stackTrace>s1</stackTrace></rerunFailure>
        <rerunError message="r2"/></testcase>`),
    );
    expect(testCase.attempts.map((a) => [a.kind, a.status, a.failure?.message])).toEqual([
      ["rerun", "failed", "r1"],
      ["rerun", "failed", "r2"],
      ["final", "failed", "main"],
    ]);
  });
});

describe("parseJunit: suites, files and timestamps", () => {
  it("attaches nested suites' cases to the outermost suite", async () => {
    const cases = await parseJunitText(
      '<testsuites name="all"><testsuite name="outer"><testsuite name="inner">' +
        '<testsuite name="innermost"><testcase name="deep"/></testsuite></testsuite>' +
        '<testcase name="shallow"/></testsuite><testsuite name="second"><testcase name="x"/></testsuite></testsuites>',
    );
    expect(cases.map((c) => [c.name, c.parent])).toEqual([
      ["deep", "outer"],
      ["shallow", "outer"],
      ["x", "second"],
    ]);
  });

  it("accepts a <testsuite> root and testcases directly under <testsuites>", async () => {
    expect((await only('<testsuite name="root"><testcase name="t"/></testsuite>')).parent).toBe(
      "root",
    );
    expect((await only('<testsuites><testcase name="t"/></testsuites>')).parent).toBe("");
  });

  it("resolves file: testcase file → filepath → nearest suite file → filepath", async () => {
    const cases = await parseJunitText(
      '<testsuites><testsuite name="o" filepath="outer.ts"><testsuite name="i" file="inner.ts">' +
        '<testcase name="own" file="own.ts" filepath="ignored.ts"/>' +
        '<testcase name="path" filepath="path.ts"/>' +
        '<testcase name="inner"/></testsuite><testcase name="outer"/></testsuite>' +
        '<testsuite name="none"><testcase name="nothing"/></testsuite></testsuites>',
    );
    expect(cases.map((c) => [c.name, c.file])).toEqual([
      ["own", "own.ts"],
      ["path", "path.ts"],
      ["inner", "inner.ts"],
      ["outer", "outer.ts"],
      ["nothing", null],
    ]);
  });

  it("takes the testcase timestamp, else the nearest suite's that can be read", async () => {
    const cases = await parseJunitText(
      '<testsuites timestamp="2024-01-01T00:00:00Z"><testsuite name="a" timestamp="garbage">' +
        '<testcase name="fromRoot"/><testcase name="own" timestamp="2024-02-02T10:00:00+02:00"/>' +
        '</testsuite><testsuite name="b" timestamp="2024-03-03"><testcase name="fromSuite"/></testsuite></testsuites>',
    );
    expect(cases.map((c) => [c.name, c.attempts[0]?.startedAt])).toEqual([
      ["fromRoot", Date.parse("2024-01-01T00:00:00Z")],
      ["own", Date.parse("2024-02-02T08:00:00Z")],
      ["fromSuite", Date.parse("2024-03-03T00:00:00Z")],
    ]);
  });

  it("does not use the suite time as the testcase duration", async () => {
    const testCase = await only(suite('<testcase name="t"/>', 'name="S" time="9"'));
    expect(testCase.attempts[0]?.durationMs).toBeNull();
  });
});

describe("parseJunit: text, entities and characters", () => {
  it("decodes entities and character references in names and text", async () => {
    const testCase = await only(
      suite(
        '<testcase name="a &lt; b &amp;&amp; &quot;c&quot; &#x1F600; &#233;" classname="&apos;k&apos;">' +
          '<failure message="line1&#10;line2">x &gt; y</failure></testcase>',
      ),
    );
    expect(testCase.name).toBe('a < b && "c" 😀 é');
    expect(testCase.classname).toBe("'k'");
    expect(testCase.attempts[0]?.failure).toEqual({
      type: null,
      message: "line1\nline2",
      text: "x > y",
    });
  });

  it("strips raw control characters instead of rejecting the file", async () => {
    const testCase = await only(
      suite(
        '<testcase name="t\u0001"><system-out>\u001b[31mred\u001b[0m\u0000</system-out></testcase>',
      ),
    );
    expect(testCase.name).toBe("t");
    expect(testCase.attempts[0]?.systemOut).toBe("[31mred[0m");
  });

  it("keeps references to forbidden characters (&#27;) as literal text", async () => {
    const testCase = await only(
      suite('<testcase name="t"><system-out>&#27;[1m bold</system-out></testcase>'),
    );
    expect(testCase.attempts[0]?.systemOut).toBe("&#27;[1m bold");
  });

  it("truncates text fields to TEXT_LIMIT and names to 1,000 characters", async () => {
    const long = "x".repeat(TEXT_LIMIT * 3);
    const testCase = await only(
      `<testsuite name="${"s".repeat(1500)}"><testcase name="${"n".repeat(1500)}" classname="${"c".repeat(1001)}">` +
        `<failure message="${long}">${long}</failure><system-out>${long}</system-out></testcase></testsuite>`,
    );
    expect(testCase.name).toHaveLength(1000);
    expect(testCase.classname).toHaveLength(1000);
    expect(testCase.parent).toHaveLength(1000);
    const [attempt] = testCase.attempts;
    expect(attempt?.failure?.message).toHaveLength(TEXT_LIMIT);
    expect(attempt?.failure?.text).toHaveLength(TEXT_LIMIT);
    expect(attempt?.systemOut).toHaveLength(TEXT_LIMIT);
  });

  it("accepts a UTF-8 BOM, as bytes and as text", async () => {
    const xml = '<testsuite name="s"><testcase name="é"/></testsuite>';
    const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(xml)]);
    expect((await parseJunitText(bytes))[0]?.name).toBe("é");
    expect((await parseJunitText(`\uFEFF${xml}`))[0]?.name).toBe("é");
  });

  it("decodes the encoding the XML declaration names, and UTF-16 with a BOM", async () => {
    const latin1 = Buffer.concat([
      Buffer.from(
        '<?xml version="1.0" encoding="ISO-8859-1"?><testsuite name="s"><testcase name="caf',
      ),
      Buffer.from([0xe9]),
      Buffer.from('"/></testsuite>'),
    ]);
    expect((await parseJunitText(latin1))[0]?.name).toBe("café");
    const utf16 = Buffer.concat([
      Buffer.from([0xff, 0xfe]),
      Buffer.from('<testsuite name="s"><testcase name="日本"/></testsuite>', "utf16le"),
    ]);
    expect((await parseJunitText(utf16))[0]?.name).toBe("日本");
  });

  it("reads multi-byte characters split across stream chunks", async () => {
    const bytes = Buffer.from('<testsuite name="s"><testcase name="𠀋 日本語"/></testsuite>');
    const chunks = [...bytes].map((byte) => Uint8Array.of(byte)); // one byte per chunk
    const cases: ParsedTestCase[] = [];
    for await (const testCase of parseJunit(Readable.from(chunks))) cases.push(testCase);
    expect(cases.map((c) => c.name)).toEqual(["𠀋 日本語"]);
  });
});

describe("parseJunit: rejected files", () => {
  it.each([
    ["", "empty file"],
    ["  \n\t ", "empty file"],
    ["this is not an XML!\n", "not XML: the file does not start with '<'"],
    ["<html><body>404</body></html>", "root element <html> is not <testsuites> or <testsuite>"],
    ['<?xml version="1.0"?><!-- nothing -->', "not well-formed XML at line 1: no root element"],
  ])("rejects %j", async (input, reason) => {
    expect(await rejection(input)).toBe(reason);
  });

  it("rejects a file cut off inside CDATA or inside an element, naming the line", async () => {
    expect(await rejection('<testsuite>\n<testcase name="t">\n<failure><![CDATA[trace')).toBe(
      "not well-formed XML at line 3: unclosed CDATA section (file cut off?)",
    );
    expect(await rejection('<testsuite>\n<testcase name="t">\n<skipped/>')).toBe(
      "not well-formed XML at line 3: file ends inside <testcase> (cut off?)",
    );
  });

  it("rejects several concatenated documents, like Trunk", async () => {
    const document =
      '<?xml version="1.0"?>\n<testsuite name="s"><testcase name="t"/></testsuite>\n';
    expect(await rejection(document + document)).toMatch(
      /^not well-formed XML at line 3: content after the end of the root element/,
    );
  });

  it("rejects '<' in an attribute value and undefined entities", async () => {
    expect(await rejection('<testsuite name="a<b"/>')).toMatch(/^not well-formed XML at line 1: /);
    expect(await rejection('<testsuite name="s">&nope;</testsuite>')).toBe(
      "not well-formed XML at line 1: undefined entity (DTD entities are not expanded)",
    );
  });

  it("never expands DTD entities (XXE)", async () => {
    const xxe =
      '<?xml version="1.0"?><!DOCTYPE testsuite [<!ENTITY x SYSTEM "file:///etc/passwd">]>' +
      '<testsuite name="s"><testcase name="&x;"/></testsuite>';
    expect(await rejection(xxe)).toMatch(/undefined entity/);
  });

  it("yields the cases read before a late error, then throws (the caller discards the file)", async () => {
    const seen: string[] = [];
    const parse = async () => {
      const input = '<testsuite name="s"><testcase name="a"/><testcase name="b"/><testcase';
      for await (const testCase of parseJunit([input])) seen.push(testCase.name);
    };
    await expect(parse()).rejects.toBeInstanceOf(JunitParseError);
    expect(seen).toEqual(["a", "b"]);
  });
});
