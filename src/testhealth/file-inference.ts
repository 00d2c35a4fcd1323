/**
 * A test's file when its report names none, inferred from its class name only where that is
 * certain: a wrong file is worse than none. One rule today, pytest's dotted `classname` when every
 * part fits pytest's default collection patterns (`tests.api.test_orders.TestCheckout` →
 * `tests/api/test_orders.py`).
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
