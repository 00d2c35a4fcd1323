/** Mainline's v1 API for a benchmark: POST a JSON body, the answer's JSON, or an error on non-200. */
export class Api {
  constructor(
    private readonly baseUrl: string,
    private readonly token: string,
  ) {}

  async call<T = Record<string, unknown>>(operation: string, body: unknown): Promise<T> {
    const response = await fetch(`${this.baseUrl}/v1/${operation}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-token": this.token },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    if (response.status !== 200) {
      throw new Error(`${operation}: ${String(response.status)} ${text}`);
    }
    return JSON.parse(text) as T;
  }
}
