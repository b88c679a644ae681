// The jobs list: newest first, state and progress, refreshed every few seconds while the page is open (usePolled).
import { api, jobsPath } from "./api.js";
import { ErrorNote, Progress, StatusBadge, ago, html, usePolled } from "./util.js";

export function JobsList() {
  const [page, error] = usePolled(() => api(`${jobsPath()}?limit=100`), []);
  const jobs = page ? page.data : null;

  return html`<section>
    <div class="row-between">
      <h1>Fine-tuning jobs</h1>
      <a class="button primary" href="#/new" data-testid="new-job">New job</a>
    </div>
    <${ErrorNote} error=${error} />
    ${jobs === null && !error && html`<p class="muted">Loading…</p>`}
    ${jobs?.length === 0 &&
    html`<p class="muted">No jobs yet. <a href="#/new">Create one</a> or POST /v1/fine_tuning/jobs.</p>`}
    ${jobs?.length > 0 &&
    html`<table class="table" data-testid="jobs-table">
      <thead>
        <tr>
          <th>Job</th>
          <th>Model</th>
          <th>State</th>
          <th>Progress</th>
          <th>Created</th>
        </tr>
      </thead>
      <tbody>
        ${jobs.map(
          (j) => html`<tr key=${j.id} data-job-id=${j.id}>
            <td><a href=${`#/jobs/${j.id}`}>${j.id}</a>${j.suffix && html` <span class="muted">${j.suffix}</span>`}</td>
            <td>${j.model}</td>
            <td title=${j.waiting?.reason || ""}><${StatusBadge} status=${j.status} /></td>
            <td><${Progress} done=${j.steps_done} total=${j.total_steps} /></td>
            <td title=${new Date(j.created_at * 1000).toLocaleString()}>${ago(j.created_at)}</td>
          </tr>`,
        )}
      </tbody>
    </table>`}
  </section>`;
}
