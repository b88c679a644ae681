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

// token: another bearer than the project's key (the operator's ADMIN_TOKEN on the fleet page); its 401 is that
// token's, so it does not sign the user out
export async function api(path, { method = "GET", body, form, idempotencyKey, signal, token } = {}) {
  const h = headers(idempotencyKey ? { "Idempotency-Key": idempotencyKey } : {});
  if (token !== undefined) h.Authorization = `Bearer ${token}`;
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
  if (r.status === 401 && token === undefined) window.dispatchEvent(new CustomEvent("rft:unauthorized"));
  if (!r.ok) throw new ApiError(r.status, data);
  return data;
}

export const jobsPath = (id = "") => `/v1/fine_tuning/jobs${id ? `/${encodeURIComponent(id)}` : ""}`;
export const TERMINAL = new Set(["succeeded", "failed", "cancelled"]);

const sleep = (ms, signal) =>
  new Promise((resolve) => {
    const done = () => {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });

// Calls onEvent(event) for every event of the job, oldest first, then live, until the job is finished and its
// last event read, or the signal aborts. A dropped connection is resumed after the last event seen.
export async function followEvents(jobId, onEvent, { signal, onState } = {}) {
  let lastId = null;
  let backoff = 1000;
  while (!signal?.aborted) {
    let received = 0;
    let reader = null;
    try {
      const h = headers(lastId ? { "Last-Event-ID": lastId } : {});
      // rollouts left out: a long job's replay stays light; the viewer reads a step's rollouts from …/samples
      const r = await fetch(`${jobsPath(jobId)}/events/stream?samples=false`, { headers: h, signal });
      if (!r.ok) throw new ApiError(r.status, await r.json().catch(() => null));
      onState?.("live");
      reader = r.body.getReader();
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
          if (data) {
            onEvent(JSON.parse(data));
            received += 1;
            backoff = 1000; // only a stream that delivers resets the backoff
          }
          if (id) lastId = id;
        }
      }
      // The server ends the stream after a finished job's last event, but a proxy or a restart ends it too: a
      // finished job is done once a stream resumed after the last event seen brings nothing more.
      const job = await api(jobsPath(jobId), { signal });
      if (TERMINAL.has(job.status)) {
        if (received === 0) {
          onState?.("ended");
          return;
        }
        continue; // at once: ask for anything after lastId
      }
    } catch (e) {
      if (signal?.aborted) return;
      if (e instanceof ApiError && (e.status === 401 || e.status === 404)) {
        onState?.(`error: ${e}`);
        return;
      }
    } finally {
      reader?.cancel().catch(() => {}); // never leave a half-read response (and its server thread) open
    }
    onState?.("reconnecting");
    await sleep(backoff, signal);
    backoff = Math.min(backoff * 2, 15000);
  }
}
