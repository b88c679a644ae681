// The fleet page (#/fleet), for the operator: the workers holding work now, each with its jobs and training sessions
// (more than one tenant: a pool sharing the worker's device), their base models and how many projects, and what waits
// for a worker (GET /v1/admin/fleet). It needs the API's ADMIN_TOKEN, asked for here and kept in this tab only; the
// project's key does not open it. Refreshed every few seconds like the lists (usePolled).
import { useState } from "preact/hooks";
import { ApiError, api } from "./api.js";
import { ErrorNote, html, usePolled } from "./util.js";

const TOKEN = "rft.adminToken";

function TokenForm({ onToken }) {
  const [value, setValue] = useState("");
  const submit = (e) => {
    e.preventDefault();
    onToken(value.trim());
  };
  return html`<form class="card" onSubmit=${submit} data-testid="fleet-token">
    <p class="muted">The fleet is the operator's view: enter the API's admin token (ADMIN_TOKEN). It is kept in this
      tab only.</p>
    <label>Admin token <input type="password" name="admin_token" autocomplete="off" value=${value}
      onInput=${(e) => setValue(e.target.value)} /></label>
    <button class="primary" type="submit">Show the fleet</button>
  </form>`;
}

function Workers({ fleet }) {
  if (!fleet.workers.length) return html`<p class="muted" data-testid="fleet-empty">No worker holds work now.</p>`;
  return html`<table class="table" data-testid="fleet-workers">
    <thead><tr><th>Worker</th><th>Tenants</th><th>Jobs</th><th>Sessions</th><th>Projects</th><th>Base models</th></tr></thead>
    <tbody>${fleet.workers.map(
      (w) => html`<tr key=${w.worker_id} data-testid="fleet-worker" data-tenants=${w.tenants}>
        <td><code>${w.worker_id}</code></td>
        <td>${w.tenants}${w.tenants > 1 ? html` <span class="badge">pooled</span>` : ""}</td>
        <td>${w.jobs}</td><td>${w.sessions}</td><td>${w.projects}</td>
        <td>${w.base_models.join(", ")}</td>
      </tr>`,
    )}</tbody>
  </table>`;
}

export function FleetPage() {
  const [token, setToken] = useState(sessionStorage.getItem(TOKEN) || "");
  const [fleet, error] = usePolled(() => (token ? api("/v1/admin/fleet", { token }) : Promise.resolve(null)), [token]);
  const use = (t) => {
    sessionStorage.setItem(TOKEN, t);
    setToken(t);
  };
  const refused = error instanceof ApiError && (error.status === 401 || error.status === 403);
  return html`<section data-testid="fleet-page">
    <h1>Fleet</h1>
    ${!token || refused ? html`<${TokenForm} onToken=${use} />` : ""}
    <${ErrorNote} error=${refused ? "That admin token was not accepted (or the admin routes are off)." : error} />
    ${fleet && !refused
      ? html`<p data-testid="fleet-waiting">${fleet.queued_jobs} job(s) queued, ${fleet.waiting_sessions} session(s)
          waiting for a worker.</p>
          <${Workers} fleet=${fleet} />`
      : ""}
  </section>`;
}
