// Chat memory web page: plain JavaScript, no build step. Talks to the chat API of local mode
// (the page's own origin) or of a deployment (base URL and bearer token in Settings).
"use strict";

const STORE = {
  base: "chatmemory.apiBase",
  token: "chatmemory.token",
  user: "chatmemory.user",
  windowTurns: "chatmemory.windowTurns",
  session: "chatmemory.session",
};
const POLL_MS = 1500;
const POLL_LIMIT_MS = 5 * 60 * 1000;
// Statuses and intents come from the API's own definitions (schema.js, generated).
const STATUS = SCHEMA.SessionStatus;
const INTENT = SCHEMA.Intent;
const STATUS_TEXT = {
  [STATUS.OPEN]: "open",
  [STATUS.ENDED]: "consolidating",
  [STATUS.CONSOLIDATED]: "remembered",
  [STATUS.FAILED]: "failed",
};

const state = {
  sessions: [],
  nextToken: null,
  current: null, // the selected session object
  turns: [],
  polling: null,
  sending: false,
};

const $ = (id) => document.getElementById(id);

// --- settings and the API ---------------------------------------------------------------------

function settings() {
  const base = (localStorage.getItem(STORE.base) || "").trim().replace(/\/+$/, "");
  const origin = window.location.origin && window.location.origin !== "null"
    ? window.location.origin : "";
  return {
    base: base || origin,
    custom: Boolean(base),
    token: localStorage.getItem(STORE.token) || "",
    user: (localStorage.getItem(STORE.user) || "").trim(),
  };
}

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function api(method, path, body) {
  const cfg = settings();
  if (!cfg.base) {
    throw new ApiError(0, "no_api", "Set the API base URL in Settings.");
  }
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (cfg.token) headers.Authorization = `Bearer ${cfg.token}`;
  if (cfg.user) headers["X-User-Id"] = cfg.user;
  let response;
  try {
    response = await fetch(cfg.base + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (error) {
    throw new ApiError(0, "unreachable", `Cannot reach the API at ${cfg.base} (${error.message}).`);
  }
  if (response.status === 204) return null;
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const error = data && data.error;
    const message = error && error.message
      ? error.message
      : (data && data.message) || `HTTP ${response.status}`;
    throw new ApiError(response.status, (error && error.code) || `http_${response.status}`, message);
  }
  return data;
}

// --- small DOM helpers (text only: nothing from the API is parsed as HTML) ----------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
const dayFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium" });

function formatDate(iso, withTime = true) {
  if (!iso) return "";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return (withTime ? dateFormat : dayFormat).format(date);
}

function plural(count, word) {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

let toastTimer = null;
function showError(error) {
  const text = error instanceof ApiError && error.code && error.status
    ? `${error.message} (${error.code}, HTTP ${error.status})`
    : error.message || String(error);
  $("toast-text").textContent = text;
  $("toast").hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { $("toast").hidden = true; }, 9000);
}

function describeConnection() {
  const cfg = settings();
  const where = cfg.custom ? cfg.base : "local API";
  const who = cfg.user ? ` · user ${cfg.user}` : (cfg.custom ? "" : " · local-user");
  $("connection").textContent = `${where}${who}`;
}

// --- sessions -----------------------------------------------------------------------------------

async function loadSessions({ more = false } = {}) {
  const query = more && state.nextToken
    ? `?limit=20&next_token=${encodeURIComponent(state.nextToken)}` : "?limit=20";
  const data = await api("GET", `/sessions${query}`);
  state.sessions = more ? state.sessions.concat(data.sessions) : data.sessions;
  state.nextToken = data.next_token || null;
  renderSessions();
}

function upsertSession(session) {
  const index = state.sessions.findIndex((s) => s.session_id === session.session_id);
  if (index >= 0) state.sessions[index] = session;
  else state.sessions.unshift(session);
  if (state.current && state.current.session_id === session.session_id) {
    state.current = session;
    renderHeader();
  }
  renderSessions();
}

function badge(status) {
  return el("span", { class: `badge status-${status.toLowerCase()}`, text: STATUS_TEXT[status] || status });
}

function renderSessions() {
  const list = $("session-list");
  list.replaceChildren();
  if (!state.sessions.length) {
    list.append(el("li", { class: "muted empty", text: "No sessions yet." }));
  }
  for (const session of state.sessions) {
    const selected = state.current && state.current.session_id === session.session_id;
    list.append(el("li", { class: selected ? "session selected" : "session" },
      el("button", {
        type: "button",
        class: "session-open",
        "aria-current": selected ? "true" : undefined,
        onclick: () => selectSession(session.session_id),
      },
        el("span", { class: "session-line" },
          el("span", { class: "session-label", text: session.name }), badge(session.status)),
        el("span", { class: "session-sub muted small",
          text: `${plural(session.num_turns, "turn")} · ${formatDate(session.started_at)}` })),
      el("button", {
        type: "button",
        class: "icon-button session-delete",
        "aria-label": `Delete session ${session.name}`,
        title: "Delete session",
        onclick: () => deleteSession(session),
      }, "\u00d7")));
  }
  $("more-sessions").hidden = !state.nextToken;
}

async function newSession() {
  const session = (await api("POST", "/sessions", {})).session;
  upsertSession(session);
  await selectSession(session.session_id, session);
  $("message").focus();
}

async function selectSession(sessionId, known) {
  stopPolling();
  const session = known || (await api("GET", `/sessions/${encodeURIComponent(sessionId)}`)).session;
  state.current = session;
  localStorage.setItem(STORE.session, session.session_id);
  state.turns = await loadTurns(session.session_id);
  upsertSession(session);
  renderHeader();
  renderTurns();
  closeSidebarOnNarrow();
  if (session.status === STATUS.ENDED) startPolling(session.session_id);
}

async function loadTurns(sessionId) {
  let turns = [];
  let token = null;
  do {
    const query = token ? `&next_token=${encodeURIComponent(token)}` : "";
    const page = await api("GET", `/sessions/${encodeURIComponent(sessionId)}/messages?limit=100${query}`);
    turns = turns.concat(page.messages);
    token = page.next_token;
  } while (token && turns.length < 2000);
  return turns;
}

async function endSession() {
  const session = state.current;
  if (!session) return;
  const ended = (await api("POST", `/sessions/${encodeURIComponent(session.session_id)}/end`)).session;
  upsertSession(ended);
  startPolling(ended.session_id);
}

async function deleteSession(session) {
  const ok = window.confirm(
    `Delete "${session.name}"? Its turns and its long-term memories are removed for good.`);
  if (!ok) return;
  await api("DELETE", `/sessions/${encodeURIComponent(session.session_id)}`);
  state.sessions = state.sessions.filter((s) => s.session_id !== session.session_id);
  if (state.current && state.current.session_id === session.session_id) {
    stopPolling();
    state.current = null;
    state.turns = [];
    localStorage.removeItem(STORE.session);
    renderHeader();
    renderTurns();
  }
  renderSessions();
}

// Consolidation runs off the request path (the sessions stream): poll the session until done.
function startPolling(sessionId) {
  stopPolling();
  const started = Date.now();
  const tick = async () => {
    try {
      const session = (await api("GET", `/sessions/${encodeURIComponent(sessionId)}`)).session;
      upsertSession(session);
      if (session.status === STATUS.ENDED && Date.now() - started < POLL_LIMIT_MS) {
        state.polling = setTimeout(tick, POLL_MS);
      } else {
        state.polling = null;
      }
    } catch (error) {
      state.polling = null;
      showError(error);
    }
  };
  state.polling = setTimeout(tick, POLL_MS);
}

function stopPolling() {
  if (state.polling) clearTimeout(state.polling);
  state.polling = null;
}

// --- rendering the session -------------------------------------------------------------------

function renderHeader() {
  const session = state.current;
  const status = $("session-status");
  $("end-session").hidden = !session || session.status !== STATUS.OPEN;
  $("delete-session").hidden = !session;
  if (!session) {
    $("session-name").textContent = "No session selected";
    status.hidden = true;
    $("session-meta").textContent = "";
    setComposer(false);
    renderBanner(null);
    return;
  }
  $("session-name").textContent = session.name;
  status.hidden = false;
  status.className = `badge status-${session.status.toLowerCase()}`;
  status.textContent = STATUS_TEXT[session.status] || session.status;
  const ended = session.ended_at ? ` · ended ${formatDate(session.ended_at)}` : "";
  $("session-meta").textContent =
    `${plural(session.num_turns, "turn")} · started ${formatDate(session.started_at)}${ended}`;
  setComposer(session.status === STATUS.OPEN);
  renderBanner(session);
}

function renderBanner(session) {
  const banner = $("status-banner");
  banner.replaceChildren();
  banner.className = "banner";
  if (!session || session.status === STATUS.OPEN) {
    banner.hidden = true;
    return;
  }
  banner.hidden = false;
  const newButton = el("button", { type: "button", class: "link", onclick: () => newSession().catch(showError) },
    "Start a new session");
  if (session.status === STATUS.ENDED) {
    banner.classList.add("pending");
    banner.append(el("span", { class: "spinner", "aria-hidden": "true" }),
      el("span", { text: "Session ended. Consolidating it into long-term memory…" }));
  } else if (session.status === STATUS.CONSOLIDATED) {
    banner.classList.add("done");
    banner.append(el("span", { text: "Saved to long-term memory. Recall it from any session with " }),
      el("code", { text: "/past …" }), el("span", { text: ". " }), newButton);
  } else if (session.status === STATUS.FAILED) {
    banner.classList.add("failed");
    banner.append(el("span", {
      text: "Consolidation failed after its retries; this session is not in long-term memory. " +
        "Run `make redrive` (local mode) to try again. ",
    }), newButton);
  }
}

function setComposer(enabled) {
  $("message").disabled = !enabled || state.sending;
  $("send").disabled = !enabled || state.sending;
  $("message").placeholder = enabled
    ? "Message… (Enter sends, Shift+Enter for a new line; try /past or /verified)"
    : (state.current ? "This session has ended: start a new session to keep chatting."
      : "Start or pick a session to chat.");
}

function renderTurns() {
  const list = $("messages");
  list.replaceChildren(...state.turns.map(renderTurn));
  $("welcome").hidden = Boolean(state.current);
  if (state.current && !state.turns.length) {
    list.append(el("li", { class: "hint muted" },
      "Say something. Ask ", el("code", { text: "/past …" }), " to recall an ended session, or ",
      el("code", { text: "/verified …" }), " to answer from verified documents."));
  }
  scrollToEnd();
}

function renderTurn(turn) {
  const item = el("li", { class: "turn", dataset: { turn: String(turn.turn ?? "") } });
  const label = turn.turn ? `#${turn.turn}` : "…";
  item.append(el("div", { class: "bubble user" },
    el("span", { class: "turn-no", title: "turn number", text: label }),
    el("p", { class: "text", text: turn.input }),
    turn.created_at ? el("time", { class: "muted small", datetime: turn.created_at, text: formatDate(turn.created_at) }) : null));
  const reply = el("div", { class: `bubble assistant intent-${turn.intent || INTENT.CHAT}` });
  if (turn.intent && turn.intent !== INTENT.CHAT) {
    reply.append(el("span", { class: `intent-badge intent-${turn.intent}`, text: turn.intent === INTENT.PAST ? "recalled" : "verified" }));
  }
  if (turn.sending) {
    reply.append(el("p", { class: "text muted typing", text: "thinking…" }));
  } else if (turn.failed || turn.pending) {
    reply.append(el("p", { class: "text error-text",
      text: turn.failed ? `Not sent: ${turn.failed}` : "The model did not answer; your message is kept." }),
      el("button", { type: "button", class: "link", onclick: () => retry(turn) }, "Retry"));
  } else {
    reply.append(el("p", { class: "text", text: turn.response || "" }));
  }
  if (turn.degraded) {
    reply.append(el("p", { class: "muted small", text: "Answered without long-term memory (unavailable)." }));
  }
  if (turn.sources && turn.sources.length) reply.append(renderSources(turn));
  item.append(reply);
  return item;
}

function renderSources(turn) {
  const list = el("ul", { class: "source-list" });
  for (const source of turn.sources) {
    if (source.kind === "session") {
      list.append(el("li", { class: "source" },
        el("button", {
          type: "button", class: "link", title: "Open this session",
          onclick: () => selectSession(source.id).catch(showError),
        }, source.title || source.id),
        el("span", { class: "muted small", text: ` · ${formatDate(source.date, false)}` }),
        source.score !== undefined && source.score !== null
          ? el("span", { class: "muted small", text: ` · score ${Number(source.score).toFixed(2)}` }) : null));
    } else {
      const cite = source.doc_id ? `${source.doc_id}#${source.passage_id || ""}` : source.id;
      list.append(el("li", { class: "source" },
        el("span", { class: "cite", text: `[${cite}]` }),
        el("span", { text: ` ${source.title || ""}` }),
        source.date ? el("span", { class: "muted small", text: ` · ${formatDate(source.date, false)}` }) : null));
    }
  }
  const label = turn.intent === INTENT.VERIFIED ? "Cited passages" : "Sessions used";
  return el("details", { class: "sources", open: true },
    el("summary", { text: `${label} (${turn.sources.length})` }), list);
}

function scrollToEnd() {
  const box = $("conversation");
  box.scrollTop = box.scrollHeight;
}

// --- sending -----------------------------------------------------------------------------------

function newMessageId() {
  if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
  return `m-${Date.now()}-${Math.random().toString(16).slice(2)}`;
}

function windowTurns() {
  const raw = $("window-turns").value.trim();
  if (raw === "") return undefined;
  const value = Number.parseInt(raw, 10);
  return Number.isNaN(value) ? undefined : Math.max(0, Math.min(50, value));
}

async function send(content, clientMessageId, placeholder) {
  const session = state.current;
  const body = { content, client_message_id: clientMessageId };
  const remember = windowTurns();
  if (remember !== undefined) body.window_turns = remember;
  state.sending = true;
  setComposer(true);
  try {
    const data = await api("POST", `/sessions/${encodeURIComponent(session.session_id)}/messages`, body);
    const index = state.turns.indexOf(placeholder);
    if (index >= 0) state.turns[index] = data.turn;
    else state.turns.push(data.turn);
    session.num_turns = Math.max(session.num_turns, data.turn.turn);
    upsertSession(session);
  } catch (error) {
    placeholder.sending = false;
    placeholder.failed = error.message;
    if (error.status === 409 || error.status === 404) {
      // Ended or deleted meanwhile (the idle sweeper, another tab): show what is true now.
      selectSession(session.session_id).catch(() => {});
    }
    showError(error);
  } finally {
    state.sending = false;
    setComposer(state.current && state.current.status === STATUS.OPEN);
    if (state.current === session) renderTurns();
    $("message").focus();
  }
}

async function submitMessage(event) {
  if (event) event.preventDefault();
  const box = $("message");
  const content = box.value.trim();
  if (!content || !state.current || state.sending) return;
  box.value = "";
  const placeholder = {
    input: content, sending: true, intent: guessIntent(content), client_message_id: newMessageId(),
  };
  state.turns.push(placeholder);
  renderTurns();
  await send(content, placeholder.client_message_id, placeholder);
}

// Retrying with the same client_message_id completes the turn once, never twice.
async function retry(turn) {
  if (state.sending) return;
  turn.sending = true;
  turn.failed = null;
  renderTurns();
  await send(turn.input, turn.client_message_id || newMessageId(), turn);
}

function guessIntent(content) {
  if (content.startsWith("/past")) return INTENT.PAST;
  if (content.startsWith("/verified")) return INTENT.VERIFIED;
  return INTENT.CHAT;
}

// --- long-term memory search ---------------------------------------------------------------

async function searchMemories(event) {
  event.preventDefault();
  const query = $("memory-query").value.trim();
  if (!query) return;
  const data = await api("GET", `/memories?q=${encodeURIComponent(query)}&k=5`);
  const list = $("memory-list");
  list.replaceChildren();
  if (!data.memories.length) {
    list.append(el("li", { class: "muted", text: "Nothing remembered about that yet. Ended sessions appear here once consolidated." }));
  }
  for (const memory of data.memories) {
    const snippet = (memory.snippets && memory.snippets[0]) || "";
    list.append(el("li", { class: "memory" },
      el("button", {
        type: "button", class: "link memory-title",
        onclick: () => selectSession(memory.session_id).catch(showError),
      }, memory.title || memory.session_id),
      el("span", { class: "muted small",
        text: ` ${formatDate(memory.date, false)} · score ${Number(memory.score).toFixed(2)}` }),
      el("p", { class: "snippet small", text: snippet.length > 220 ? `${snippet.slice(0, 220)}…` : snippet })));
  }
  $("memory-results").hidden = false;
}

// --- settings ---------------------------------------------------------------------------------

function openSettings() {
  $("api-base").value = localStorage.getItem(STORE.base) || "";
  $("api-token").value = localStorage.getItem(STORE.token) || "";
  $("api-user").value = localStorage.getItem(STORE.user) || "";
  $("settings").showModal();
}

function saveSettings() {
  const pairs = [[STORE.base, $("api-base").value], [STORE.token, $("api-token").value],
    [STORE.user, $("api-user").value]];
  for (const [key, value] of pairs) {
    if (value.trim()) localStorage.setItem(key, value.trim());
    else localStorage.removeItem(key);
  }
  localStorage.removeItem(STORE.session);
  state.current = null;
  state.turns = [];
  describeConnection();
  start().catch(showError);
}

async function forgetEverything() {
  const ok = window.confirm(
    "Forget everything? All your sessions, turns and long-term memories are deleted for good.");
  if (!ok) return;
  await api("DELETE", "/memories");
  $("settings").close("cancel");
  state.current = null;
  state.turns = [];
  localStorage.removeItem(STORE.session);
  await start();
}

// --- layout -------------------------------------------------------------------------------------

function toggleSidebar(open) {
  const show = open ?? !document.body.classList.contains("sidebar-open");
  document.body.classList.toggle("sidebar-open", show);
  $("toggle-sidebar").setAttribute("aria-expanded", String(show));
}

function closeSidebarOnNarrow() {
  if (window.matchMedia("(max-width: 760px)").matches) toggleSidebar(false);
}

// --- start --------------------------------------------------------------------------------------

async function start() {
  describeConnection();
  renderHeader();
  renderTurns();
  await loadSessions();
  const remembered = localStorage.getItem(STORE.session);
  const pick = state.sessions.find((s) => s.session_id === remembered)
    || state.sessions.find((s) => s.status === STATUS.OPEN);
  if (pick) await selectSession(pick.session_id, pick);
}

function wire() {
  const guard = (fn) => (...args) => Promise.resolve(fn(...args)).catch(showError);
  $("new-session").addEventListener("click", guard(newSession));
  $("welcome-new").addEventListener("click", guard(newSession));
  $("end-session").addEventListener("click", guard(endSession));
  $("delete-session").addEventListener("click", guard(() => state.current && deleteSession(state.current)));
  $("refresh-sessions").addEventListener("click", guard(() => loadSessions()));
  $("more-sessions").addEventListener("click", guard(() => loadSessions({ more: true })));
  $("composer").addEventListener("submit", guard(submitMessage));
  $("message").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      guard(submitMessage)();
    }
  });
  $("memory-search").addEventListener("submit", guard(searchMemories));
  $("close-memories").addEventListener("click", () => { $("memory-results").hidden = true; });
  $("open-settings").addEventListener("click", openSettings);
  // Enter in a field submits with Save (the form's only submit button); Cancel just closes.
  $("cancel-settings").addEventListener("click", () => $("settings").close("cancel"));
  $("settings").addEventListener("close", () => {
    if ($("settings").returnValue === "save") saveSettings();
  });
  $("forget-all").addEventListener("click", guard(forgetEverything));
  $("toast-close").addEventListener("click", () => { $("toast").hidden = true; });
  $("toggle-sidebar").addEventListener("click", () => toggleSidebar());
  const stored = localStorage.getItem(STORE.windowTurns);
  if (stored !== null) $("window-turns").value = stored;
  $("window-turns").addEventListener("change", () => {
    const value = windowTurns();
    if (value === undefined) localStorage.removeItem(STORE.windowTurns);
    else localStorage.setItem(STORE.windowTurns, String(value));
    $("window-turns").value = value === undefined ? "" : String(value);
  });
}

document.addEventListener("DOMContentLoaded", () => {
  wire();
  start().catch(showError);
});
