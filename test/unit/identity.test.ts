import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  NAMESPACE_DNS,
  NAMESPACE_URL,
  testId,
  testIdFirstPass,
  uuidv5,
  type TestIdentity,
} from "../../src/testhealth/identity.js";
import { repoFullName } from "../../src/organizations/repositories.js";

const V5_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

// The test case of Trunk's own vectors (analytics-cli context/src/meta/id.rs and context-js tests).
const example: TestIdentity = {
  org: "example_org",
  repoFullName: "example_repo",
  file: "src/lib.rs",
  classname: "ExampleClass",
  parent: "parent/fact/path",
  name: "example_name",
};
const EXISTING_V5 = "a6e84936-3ee9-57d5-b041-ae124896f654";

describe("uuidv5", () => {
  it("matches RFC 4122 / Python uuid.uuid5 results", () => {
    expect(uuidv5(NAMESPACE_DNS, "www.example.com")).toBe("2ed6657d-e927-568b-95e1-2665a8aea6a2");
    expect(uuidv5(NAMESPACE_DNS, "python.org")).toBe("886313e1-3b8a-5372-9b90-0c9aee199e5d");
  });

  it("hashes the name as UTF-8 and accepts an uppercase namespace", () => {
    expect(uuidv5(NAMESPACE_URL.toUpperCase(), "é")).toBe(uuidv5(NAMESPACE_URL, "é"));
    expect(uuidv5(NAMESPACE_URL, "é")).not.toBe(uuidv5(NAMESPACE_URL, "e"));
  });

  it("refuses a namespace that is not a UUID", () => {
    expect(() => uuidv5("not-a-uuid", "x")).toThrow(TypeError);
  });

  it("always yields lowercase version-5, RFC-variant UUIDs", () => {
    fc.assert(
      fc.property(fc.string(), (name) => {
        expect(uuidv5(NAMESPACE_URL, name)).toMatch(V5_UUID);
      }),
    );
  });
});

describe("repoFullName", () => {
  it("joins host, owner and name in the spelling given", () => {
    expect(repoFullName({ host: "github.com", owner: "Trunk-IO", name: "trunk" })).toBe(
      "github.com/Trunk-IO/trunk",
    );
  });
});

describe("testId: Trunk's published vectors", () => {
  it("without a variant", () => {
    expect(testId(example)).toBe("06cb6db5-f807-5198-b072-af67a0636f8a");
    expect(testIdFirstPass(example)).toBe("06cb6db5-f807-5198-b072-af67a0636f8a");
  });

  it("with variant unix: first pass, then re-hashed with the variant", () => {
    expect(testIdFirstPass({ ...example, variant: "unix" })).toBe(
      "c869cb93-66e2-516d-a0ea-15ff4b413c3f",
    );
    expect(testId({ ...example, variant: "unix" })).toBe("1bf61475-b542-5faf-aa85-e66a691257a3");
  });

  it("id attribute trunk:12345 with variant unix", () => {
    const identity = { ...example, idAttribute: "trunk:12345", variant: "unix" };
    expect(testIdFirstPass(identity)).toBe("4392f63c-8dc9-5cec-bbdc-e7b90c2e5a6b");
    expect(testId(identity)).toBe("db8c5727-0fe9-560f-863f-7f3ee68df425");
  });

  it("the real staging test (trunk-staging-org, github.com/trunk-io/trunk)", () => {
    const specPath = "modules/settings/repoName/__tests__/ticketing-integration.vitest.tsx";
    expect(
      testId({
        org: "trunk-staging-org",
        repoFullName: "github.com/trunk-io/trunk",
        file: null,
        classname: specPath,
        parent: specPath,
        name: "Ticketing Integration > should allow you to select a ticketing system",
      }),
    ).toBe("3f507aef-e834-523b-a8ad-edaba6b137be");
  });

  it("the bundle's Test::new vectors, with repoFullName built from its parts", () => {
    const identity: TestIdentity = {
      org: "org_slug",
      repoFullName: repoFullName({ host: "host", owner: "owner", name: "name" }),
      file: "file",
      classname: "class_name",
      parent: "parent_name",
      name: "test_name",
    };
    expect(testId(identity)).toBe("aad1f138-09ab-5ea9-9c21-af48a03d6edd");
    expect(testId({ ...identity, idAttribute: "trunk:example-id" })).toBe(
      "208beb01-6179-546e-b0dd-8502e24ae85c",
    );
  });
});

describe("testId: id attributes", () => {
  it("passes an existing v5 UUID through when there is no variant", () => {
    expect(testId({ ...example, idAttribute: EXISTING_V5 })).toBe(EXISTING_V5);
    expect(testId({ ...example, idAttribute: EXISTING_V5.toUpperCase() })).toBe(EXISTING_V5);
    expect(testId({ ...example, idAttribute: `{${EXISTING_V5}}` })).toBe(EXISTING_V5);
    expect(testId({ ...example, idAttribute: EXISTING_V5.replaceAll("-", "") })).toBe(EXISTING_V5);
  });

  it("hashes an existing v5 UUID with the variant, then applies the variant pass", () => {
    const identity = { ...example, idAttribute: EXISTING_V5, variant: "unix" };
    expect(testIdFirstPass(identity)).toBe("8057218b-95e4-5373-afbe-c366d4058615");
    expect(testId(identity)).toBe("931cae54-0fcd-56eb-8eac-afa833699e53");
  });

  it("ignores a v4 UUID or free text, as Trunk does", () => {
    const withoutAttribute = testId({ ...example, variant: "unix" });
    expect(
      testId({ ...example, variant: "unix", idAttribute: "08e1c642-3a55-45cf-8bf9-b9d0b21785dd" }),
    ).toBe(withoutAttribute);
    expect(testId({ ...example, variant: "unix", idAttribute: "my-test-42" })).toBe(
      withoutAttribute,
    );
    expect(testId({ ...example, idAttribute: "" })).toBe(testId(example));
  });

  it("treats only the lowercase trunk: prefix as a custom id", () => {
    expect(testId({ ...example, idAttribute: "TRUNK:12345" })).toBe(testId(example));
    expect(testId({ ...example, idAttribute: "trunk:12345" })).not.toBe(testId(example));
  });

  it("makes a trunk: id independent of the file, suite and name", () => {
    const custom = { ...example, idAttribute: "trunk:12345" };
    expect(testId({ ...custom, file: "elsewhere.rs", parent: "other", name: "renamed" })).toBe(
      testId(custom),
    );
  });
});

describe("testId: properties", () => {
  const part = fc.string({ maxLength: 20 });
  const identity = fc.record({
    org: part,
    repoFullName: part,
    file: part,
    classname: part,
    parent: part,
    name: part,
  });

  it("is a deterministic lowercase v5 UUID", () => {
    fc.assert(
      fc.property(identity, part, (test, variant) => {
        const id = testId({ ...test, variant });
        expect(id).toMatch(V5_UUID);
        expect(testId({ ...test, variant })).toBe(id);
      }),
    );
  });

  it("gives different variants different ids", () => {
    fc.assert(
      fc.property(identity, part, part, (test, first, second) => {
        fc.pre(first !== second);
        expect(testId({ ...test, variant: first })).not.toBe(testId({ ...test, variant: second }));
      }),
    );
  });

  it("counts a missing part as the empty string", () => {
    fc.assert(
      fc.property(identity, (test) => {
        expect(testId({ ...test, file: "" })).toBe(testId({ ...test, file: null }));
        const { org, repoFullName, file, parent, name } = test;
        expect(testId({ ...test, classname: "", variant: "" })).toBe(
          testId({ org, repoFullName, file, parent, name }),
        );
      }),
    );
  });
});
