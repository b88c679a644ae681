// The public API as the dashboard uses it: the user's key from sessionStorage on every call, OpenAI-shaped
// errors turned into ApiError (message + the field at fault), and the job's server-sent events read with
// fetch (EventSource cannot send an Authorization header) with resume by Last-Event-ID.

const KEY = "rft.apiKey";

export const auth = {
  get key() {
    return sessionStorage.getItem(KEY) || "";
  },
  set(key) {
    sessionStorage.setItem(KEY, key);
  },
  clear() {
    sessionStorage.removeItem(KEY);
  },
};

export class ApiError extends Error {
  constructor(status, body) {
    const err = (body && body.error) || {};
    super(err.message || (typeof body === "string" && body) || `HTTP ${status}`);
    this.status = status;
    this.param = err.param || null;
    this.code = err.code || null;
  }
  toString() {
    return this.param && !this.message.includes(this.param) ? `${this.message} (${this.param})` : this.message;
  }
}

function headers(extra = {}) {
  const h = { ...extra };
  if (auth.key) h.Authorization = `Bearer ${auth.key}`;
  return h;
}

export async function api(path, { method = "GET", body, form, idempotencyKey, signal } = {}) {
  const h = headers(idempotencyKey ? { "Idempotency-Key": idempotencyKey } : {});
  let payload;
  if (form) payload = form;
  else if (body !== undefined) {
    h["Content-Type"] = "application/json";
    payload = JSON.stringify(body);
  }
  const r = await fetch(path, { method, headers: h, body: payload, signal });
  const text = await r.text();
  let data = text;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    // a proxy's HTML error page: keep the text for the message
  }
  if (r.status === 401) window.dispatchEvent(new CustomEvent("rft:unauthorized"));
  if (!r.ok) throw new ApiError(r.status, data);
  return data;
}

export const jobsPath = (id = "") => `/v1/fine_tuning/jobs${id ? `/${encodeURIComponent(id)}` : ""}`;
export const TERMINAL = new Set(["succeeded", "failed", "cancelled"]);

const sleep = (ms, signal) =>
  new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(t);
      resolve();
    });
  });

// Calls onEvent(event) for every event of the job, oldest first, then live, until the job is finished and its
// last event read, or the signal aborts. A dropped connection is resumed after the last event seen.
export async function followEvents(jobId, onEvent, { signal, onState } = {}) {
  let lastId = null;
  let backoff = 1000;
  while (!signal?.aborted) {
    try {
      const h = headers(lastId ? { "Last-Event-ID": lastId } : {});
      const r = await fetch(`${jobsPath(jobId)}/events/stream`, { headers: h, signal });
      if (!r.ok) throw new ApiError(r.status, await r.json().catch(() => null));
      onState?.("live");
      backoff = 1000;
      const reader = r.body.getReader();
      const decoder = new TextDecoder();
      let buf = "";
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buf += decoder.decode(value, { stream: true });
        let cut;
        while ((cut = buf.indexOf("\n\n")) >= 0) {
          const chunk = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          let id = null;
          let data = "";
          for (const line of chunk.split("\n")) {
            if (line.startsWith("id:")) id = line.slice(3).trim();
            else if (line.startsWith("data:")) data += line.slice(5).trim();
          }
          if (id) lastId = id;
          if (data) onEvent(JSON.parse(data));
        }
      }
      // the server ends the stream after a finished job's last event; anything else was a dropped connection
      const job = await api(jobsPath(jobId), { signal });
      if (TERMINAL.has(job.status)) {
        onState?.("ended");
        return;
      }
    } catch (e) {
      if (signal?.aborted) return;
      if (e instanceof ApiError && (e.status === 401 || e.status === 404)) {
        onState?.(`error: ${e}`);
        return;
      }
    }
    onState?.("reconnecting");
    await sleep(backoff, signal);
    backoff = Math.min(backoff * 2, 15000);
  }
}
