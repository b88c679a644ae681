// The dashboard's shell: API-key login, hash routes (#/, #/jobs/<id>, #/runs/<id>, #/new, #/usage, #/fleet) and the
// header.
import "uplot/dist/uPlot.min.css";
import "./style.css";
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { ApiError, api, auth } from "./api.js";
import { CreateJob } from "./create.js";
import { FleetPage } from "./fleet.js";
import { JobPage } from "./job.js";
import { JobsList } from "./jobs.js";
import { RunPage, RunsList } from "./runs.js";
import { UsagePage } from "./usage.js";
import { ErrorNote, html, navigate } from "./util.js";

function useRoute() {
  const [hash, setHash] = useState(window.location.hash || "#/");
  useEffect(() => {
    const on = () => setHash(window.location.hash || "#/");
    window.addEventListener("hashchange", on);
    return () => window.removeEventListener("hashchange", on);
  }, []);
  return hash;
}

function Login({ onLogin }) {
  const [key, setKey] = useState("");
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    auth.set(key.trim());
    try {
      await api("/v1/fine_tuning/jobs?limit=1"); // the key is right when the API lets us list jobs
      onLogin();
    } catch (err) {
      auth.clear();
      setError(err instanceof ApiError && err.status === 401 ? "That API key was not accepted." : err);
    } finally {
      setBusy(false);
    }
  };
  return html`<form class="card login" onSubmit=${submit} data-testid="login">
    <h1>RFT dashboard</h1>
    <p class="muted">Sign in with an API key of your project. It is kept in this tab only.</p>
    <label>API key <input type="password" name="api_key" autocomplete="off" value=${key}
      onInput=${(e) => setKey(e.target.value)} autofocus /></label>
    <${ErrorNote} error=${error} />
    <button class="primary" type="submit" disabled=${busy}>Sign in</button>
  </form>`;
}

function App() {
  const route = useRoute();
  const [authed, setAuthed] = useState(auth.key ? true : null); // null: not known yet

  useEffect(() => {
    // a service without API keys (local use, make demo) answers without one: no login page then
    if (authed === null) api("/v1/fine_tuning/jobs?limit=1").then(() => setAuthed(true), () => setAuthed(false));
  }, []);

  useEffect(() => {
    const out = () => {
      auth.clear();
      setAuthed(false);
    };
    window.addEventListener("rft:unauthorized", out);
    return () => window.removeEventListener("rft:unauthorized", out);
  }, []);

  if (authed === null) return html`<p class="muted">Connecting…</p>`;
  if (!authed) return html`<${Login} onLogin=${() => setAuthed(true)} />`;

  let page;
  const job = route.match(/^#\/jobs\/([^/?]+)/);
  const run = route.match(/^#\/runs\/([^/?]+)/);
  if (job) page = html`<${JobPage} key=${job[1]} jobId=${decodeURIComponent(job[1])} />`;
  else if (run) page = html`<${RunPage} key=${run[1]} runId=${decodeURIComponent(run[1])} />`;
  else if (route.startsWith("#/new")) page = html`<${CreateJob} />`;
  else if (route.startsWith("#/usage")) page = html`<${UsagePage} />`;
  else if (route.startsWith("#/fleet")) page = html`<${FleetPage} />`;
  else page = html`<${JobsList} /><${RunsList} />`;

  return html`<div>
    <header class="topbar">
      <a class="brand" href="#/">RFT</a>
      <nav><a href="#/">Jobs</a><a href="#/new">New job</a><a href="#/usage">Usage</a><a href="#/fleet">Fleet</a><a href="/docs" target="_blank" rel="noreferrer">API docs</a></nav>
      <button class="link" data-testid="logout" onClick=${() => {
        auth.clear();
        setAuthed(false);
        navigate("#/");
      }}>Sign out</button>
    </header>
    <main>${page}</main>
  </div>`;
}

render(html`<${App} />`, document.getElementById("app"));
