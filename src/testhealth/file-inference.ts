/**
 * A test's file when its report names none, inferred from its class name only where that is
 * certain. Today one rule, for pytest: its JUnit `classname` is the test module's dotted path,
 * then any test classes (`tests.api.test_orders.TestCheckout` → `tests/api/test_orders.py`). It
 * applies only when every part fits pytest's default collection patterns exactly:
 *
 * - package parts are lower-case Python identifiers (`[a-z_][a-z0-9_]*`);
 * - exactly one part is a test module (`test_*` or `*_test`), and it is the last one that is not
 *   a class;
 * - every part after it is a test class (`Test…`, starting with `Test` followed by an upper-case
 *   letter, a digit, `_` or nothing);
 * - the test's name is a test function (`test…`, optionally with `[parameters]`).
 *
 * Anything else (Java's `com.acme.CheckoutTest`, a module without the `test_` prefix, two parts
 * that could each be the module) infers nothing: a wrong file is worse than none.
 */

const PACKAGE = /^[a-z_][a-z0-9_]*$/;
const MODULE = /^(?:test_[a-z0-9_]*|[a-z_][a-z0-9_]*_test)$/;
const CLASS = /^Test(?:[A-Z0-9_][A-Za-z0-9_]*)?$/;
const FUNCTION = /^test[A-Za-z0-9_]*(?:\[.*\])?$/s;

export function inferTestFile(classname: string, name: string): string | undefined {
  if (!FUNCTION.test(name)) return undefined;
  const parts = classname.split(".");
  let end = parts.length;
  while (end > 0 && CLASS.test(parts[end - 1] as string)) end -= 1;
  const modulePath = parts.slice(0, end);
  const module = modulePath.at(-1);
  if (module === undefined || !MODULE.test(module)) return undefined;
  const packages = modulePath.slice(0, -1);
  if (!packages.every((part) => PACKAGE.test(part))) return undefined;
  if (packages.some((part) => MODULE.test(part))) return undefined;
  return `${modulePath.join("/")}.py`;
}
