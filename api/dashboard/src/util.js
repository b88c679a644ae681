import { h } from "preact";
import { useEffect, useState } from "preact/hooks";
import htm from "htm";

export const html = htm.bind(h);

export function fmt(v, digits = 3) {
  if (v === null || v === undefined || Number.isNaN(v)) return "–";
  if (typeof v !== "number") return String(v);
  if (Number.isInteger(v)) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e5)) return v.toExponential(2);
  return v.toFixed(digits);
}

export function ago(unixSeconds) {
  if (!unixSeconds) return "–";
  const s = Math.max(0, Math.round(Date.now() / 1000 - unixSeconds));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return new Date(unixSeconds * 1000).toLocaleDateString();
}

export function when(unixSeconds) {
  return unixSeconds ? new Date(unixSeconds * 1000).toLocaleString() : "–";
}

export function navigate(hash) {
  window.location.hash = hash;
}

export function StatusBadge({ status }) {
  return html`<span class=${`badge status-${status}`} data-testid="status">${status.replace("_", " ")}</span>`;
}

export function Progress({ done, total }) {
  const pct = total ? Math.min(100, (100 * done) / total) : 0;
  return html`<div class="progress" title=${`${done}/${total} steps`}>
    <div class="bar" style=${{ width: `${pct}%` }}></div>
    <span>${done}/${total}</span>
  </div>`;
}

export function ErrorNote({ error }) {
  if (!error) return null;
  return html`<div class="error-note" role="alert" data-testid="error">${String(error)}</div>`;
}

// [value, error] of load(), called now and again every 3 s (15 s in a hidden tab) while the component lives.
export function usePolled(load, deps) {
  const [value, setValue] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    let stop = false;
    let timer;
    const tick = async () => {
      try {
        const v = await load();
        if (!stop) {
          setValue(v);
          setError(null);
        }
      } catch (e) {
        if (!stop) setError(e);
      }
      if (!stop) timer = setTimeout(tick, document.hidden ? 15000 : 3000);
    };
    tick();
    return () => {
      stop = true;
      clearTimeout(timer);
    };
  }, deps);
  return [value, error];
}
