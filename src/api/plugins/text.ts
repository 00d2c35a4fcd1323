import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ApiError } from "../../lib/errors.js";
import { findUnstorableText } from "../../lib/text.js";

/**
 * Every string a request brings (path parameters, query, JSON body) must be text both databases
 * store as sent: PostgreSQL refuses NUL in `text` and SQLite would keep it, and an unpaired
 * surrogate would be silently replaced. Such a request is a 400 naming the field, checked
 * before the schemas so that every operation, present and future, is covered.
 */
export function installTextCheck(app: FastifyInstance): void {
  app.addHook("preValidation", (request: FastifyRequest, _reply: FastifyReply, done) => {
    const problem =
      findUnstorableText(request.params, "") ??
      findUnstorableText(request.query, "") ??
      findUnstorableText(request.body, "");
    if (!problem) {
      done();
      return;
    }
    done(
      new ApiError("invalid_request", `Invalid request: ${problem.path} ${problem.message}.`, [
        problem,
      ]),
    );
  });
}
