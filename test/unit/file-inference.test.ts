import { describe, expect, it } from "vitest";
import { inferTestFile } from "../../src/testhealth/file-inference.js";

describe("inferring a test's file from its class name", () => {
  it("pytest modules, with or without test classes", () => {
    expect(inferTestFile("tests.test_foo.TestBar", "test_baz")).toBe("tests/test_foo.py");
    expect(inferTestFile("tests.test_foo", "test_baz")).toBe("tests/test_foo.py");
    expect(inferTestFile("test_foo", "test_baz[1-2]")).toBe("test_foo.py");
    expect(inferTestFile("app.api.orders_test.TestCheckout.TestNested", "test_it")).toBe(
      "app/api/orders_test.py",
    );
    expect(inferTestFile("tests.test_foo.Test", "testSomething")).toBe("tests/test_foo.py");
  });

  it("nothing where it is not certain", () => {
    // Java and Kotlin: packages and a class that is not pytest's.
    expect(inferTestFile("com.acme.CheckoutTest", "testCheckout")).toBeUndefined();
    expect(inferTestFile("com.acme.test_utils.CheckoutTest", "test_it")).toBeUndefined();
    // Not a test module by pytest's default patterns.
    expect(inferTestFile("tests.foo.TestBar", "test_baz")).toBeUndefined();
    expect(inferTestFile("tests.helpers", "test_baz")).toBeUndefined();
    // Two parts that could each be the module.
    expect(inferTestFile("test_pkg.test_foo.TestBar", "test_baz")).toBeUndefined();
    // Not pytest's names for classes, functions or packages.
    expect(inferTestFile("tests.test_foo.Testing", "test_baz")).toBeUndefined();
    expect(inferTestFile("tests.test_foo.BarTests", "test_baz")).toBeUndefined();
    expect(inferTestFile("tests.test_foo.TestBar", "checkout works")).toBeUndefined();
    expect(inferTestFile("Tests.test_foo", "test_baz")).toBeUndefined();
    expect(inferTestFile("my-tests.test_foo", "test_baz")).toBeUndefined();
    expect(inferTestFile("", "test_baz")).toBeUndefined();
    expect(inferTestFile("tests..test_foo", "test_baz")).toBeUndefined();
    expect(inferTestFile("TestBar", "test_baz")).toBeUndefined();
  });
});
