import { ApiException } from "@kubernetes/client-node";

/** The parts of a failed API call tests assert on: the HTTP code and the API server's Status. */
export type ApiError = { code: number; reason: string; message: string; status: Record<string, unknown> };

/** Reads the HTTP code and the Status body of an API error; undefined when `error` is not one. */
export function apiError(error: unknown): ApiError | undefined {
  if (!(error instanceof ApiException)) return undefined;
  const body: unknown = error.body;
  let status: Record<string, unknown> = {};
  if (typeof body === "string") {
    try {
      status = JSON.parse(body) as Record<string, unknown>;
    } catch {
      status = { message: body };
    }
  } else if (body !== null && typeof body === "object") {
    status = body as Record<string, unknown>;
  }
  return {
    code: error.code,
    reason: typeof status.reason === "string" ? status.reason : "",
    message: typeof status.message === "string" ? status.message : String(error.message),
    status,
  };
}

/** Awaits `call`, which must fail with an API error; returns that error (a success or another error fails the test). */
export async function expectApiError(call: Promise<unknown>): Promise<ApiError> {
  try {
    await call;
  } catch (error) {
    const parsed = apiError(error);
    if (parsed) return parsed;
    throw error;
  }
  throw new Error("expected the API server to reject the request, but it succeeded");
}
