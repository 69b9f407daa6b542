// Chat memory web page: plain JavaScript, no build step. Talks to the chat API of local mode
// (the page's own origin) or of a deployment (base URL and bearer token in Settings).
"use strict";

const STORE = {
  base: "chatmemory.apiBase",
  token: "chatmemory.token",
  user: "chatmemory.user",
  agentUser: "chatmemory.agentUser", // who the agent desk acts as (local mode's X-User-Id)
  windowTurns: "chatmemory.windowTurns",
  session: "chatmemory.session", // + "|" + whose(): the conversation the page was in
  outbox: "chatmemory.outbox", // + "|" + whose(): messages not answered yet, per session
};
// Identifiers (schema.js, from chatmemory.schema): an id goes into a path only if the API would
// accept it, encoded whole, so no id can name another route ("..", which the browser collapses,
// would make DELETE /memories/records/.. the DELETE /memories that erases everything).
const ID_RULE = new RegExp(SCHEMA.Identifier.pattern);

function idSegment(id) {
  if (typeof id !== "string" || id.length > SCHEMA.Identifier.maxLength || !ID_RULE.test(id)) {
    throw new ApiError(0, "invalid_id", `Not an id the API accepts: ${JSON.stringify(id)}.`);
  }
  return encodeURIComponent(id);
}

function turnSegment(turn) {
  if (!Number.isInteger(turn) || turn < 1 || turn > SCHEMA.Identifier.maxTurnNumber) {
    throw new ApiError(0, "invalid_id", `Not a turn number: ${JSON.stringify(turn)}.`);
  }
  return String(turn);
}

const POLL_MS = 1500;
const POLL_LIMIT_MS = 5 * 60 * 1000;
// Statuses and intents come from the API's own definitions (schema.js, generated).
const STATUS = SCHEMA.SessionStatus;
const INTENT = SCHEMA.Intent;
const SOURCE = SCHEMA.SourceKind;
// Record types, statuses and origins: generated into schema.js from chatmemory.schema.
const RECORD_TYPE = SCHEMA.RecordType;
const RECORD_STATUS = SCHEMA.RecordStatus;
const RECORD_ORIGIN = SCHEMA.RecordOrigin;
const RECORD_TYPE_TEXT = {
  [RECORD_TYPE.FACT]: "fact",
  [RECORD_TYPE.PREFERENCE]: "preference",
  [RECORD_TYPE.SUMMARY]: "session summary",
  [RECORD_TYPE.OPEN_QUESTION]: "left open",
};
const INTENT_BADGE = {
  [INTENT.PAST]: "recalled",
  [INTENT.VERIFIED]: "verified",
  [INTENT.REMEMBER]: "remembered",
};
if (INTENT.HUMAN) INTENT_BADGE[INTENT.HUMAN] = "person";
const SOURCES_LABEL = {
  [INTENT.PAST]: "Sessions used",
  [INTENT.VERIFIED]: "Cited passages",
  [INTENT.REMEMBER]: "Remembered",
};
// A command as the API reads it (chatmemory/services/conversation/routing.py): its prefix, then
// a space or the end. Each but /human needs something after it: the page says so before
// sending (the API would refuse it with a 400), with an example.
const COMMAND = /^\s*\/(past|verified|remember|human)(?=\s|$)\s*/i;
const COMMAND_NEEDS = {
  [INTENT.PAST]: ["a question", "/past what did I say about my garden?"],
  [INTENT.VERIFIED]: ["a question", "/verified how do I reset my password?"],
  [INTENT.REMEMBER]: ["what to remember", "/remember I am vegetarian"],
};
const RECORDS_PAGE = 100;
const RECORDS_CAP = 1000;
// The hand-off to a person: its states and reasons, and the origin of an agent's reply.
const HANDOFF = SCHEMA.HandoffState;
const REASON = SCHEMA.HandoffReason;
const ORIGIN = SCHEMA.TurnOrigin;
const REASON_TEXT = {
  [REASON.USER_REQUEST]: "the user asked for a person",
  [REASON.NOTHING_VERIFIED]: "nothing verified answered",
  [REASON.NEGATIVE_SENTIMENT]: "repeated negative messages",
};
const HANDOFF_POLL_MS = 3000; // while a person has the conversation: their replies, the hand-back
const HANDOFF_WINDOW = 20; // the newest turns each poll reads
const AGENT_POLL_MS = 3000; // the agent desk: the queue and the open session
const LOCAL_AGENT = "agent"; // local/run's default --agents
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
  flushing: new Map(), // session_id -> its outbox's send loop while one runs (see flushOutbox)
  inFlight: new Map(), // session_id -> Set of the client_message_ids on their way
  // client_message_id -> its answer as it streams in: {text, sources, stop(), stopped}
  streams: new Map(),
  continued: new Map(), // ended session_id -> the session this page continued it in
  retryTimer: null,
  retryAttempt: 0, // retries since the last answer: the backoff doubles with each
  records: [], // the caller's records (every type), as GET /memories/records lists them
  recordsLoaded: false,
  recordsComplete: true,
  editing: null, // the record_id being corrected
  draft: "", // its text as typed so far (kept when the panel is drawn again meanwhile)
  profileLoading: null,
  // Sessions and records an answer used that are gone (deleted since): their links say so.
  goneSessions: new Set(),
  goneRecords: new Set(),
  // "chat" (the user view) or "agent" (the agent desk, ?view=agent)
  view: new URLSearchParams(window.location.search).get("view") === "agent" ? "agent" : "chat",
};

// Polling the open conversation while a person has it: one loop at a time (a tick under way
// holds the next one back).
const handoffPoll = { timer: null, busy: false };

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

// `user` (the agent desk) replaces the X-User-Id of Settings; null sends none.
async function api(method, path, body, { signal, user } = {}) {
  const response = await send(method, path, body, { signal, user });
  if (response.status === 204) return null;
  const data = await jsonOf(response);
  if (!response.ok) throw refusal(response.status, data);
  return data;
}

// A response's JSON body; null when it has none or it is not JSON (a gateway's HTML page).
async function jsonOf(response) {
  const text = await response.text();
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return null;
  }
}

async function send(method, path, body, { signal, user, accept = "application/json" } = {}) {
  const cfg = settings();
  if (!cfg.base) {
    throw new ApiError(0, "no_api", "Set the API base URL in Settings.");
  }
  const headers = { Accept: accept };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (cfg.token) headers.Authorization = `Bearer ${cfg.token}`;
  const caller = user === undefined ? cfg.user : user;
  if (caller) headers["X-User-Id"] = caller;
  try {
    return await fetch(cfg.base + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    });
  } catch (error) {
    if (signal && signal.aborted && signal.reason === STOPPED) throw STOPPED;
    throw new ApiError(0, "unreachable", `Cannot reach the API at ${cfg.base} (${error.message}).`);
  }
}

// The API's error answer ({"error": {code, message}}, or a gateway's {"message"}) as an ApiError.
function refusal(status, data) {
  const error = data && data.error;
  const message = error && error.message
    ? error.message
    : (data && data.message) || `HTTP ${status}`;
  return new ApiError(status, (error && error.code) || `http_${status}`, message);
}

// What the reader's Stop aborts a streamed answer with (an abort that is not a lost connection).
const STOPPED = new Error("stopped");

// POST a message to the stream route (POST …/messages/stream) and read its server-sent events as
// they come: `memory` and `delta` go to onEvent, `turn` is the answer (the buffered route's
// envelope), `error` is thrown as the buffered route's error would be. A refused request is the
// buffered route's JSON error, thrown before any event. `signal` aborts it: with STOPPED, the
// server stores what it had sent, marked stopped.
async function streamMessage(path, body, { signal, onEvent, onOpen }) {
  const response = await send("POST", path, body, { signal, accept: "text/event-stream" });
  if (!response.ok) throw refusal(response.status, await jsonOf(response));
  if (onOpen) onOpen();
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  const events = serverSentEvents();
  let last = null; // the turn or error event: the end (the body is read to its end after it)
  try {
    for (;;) {
      const { value, done } = await reader.read();
      for (const event of last ? [] : events.push(done ? "\n\n" : value)) {
        const data = JSON.parse(event.data);
        if (event.event === "turn" || event.event === "error") {
          last = { event: event.event, data };
          break;
        }
        onEvent(event.event, data);
      }
      if (done) break;
    }
  } catch (error) {
    if (signal && signal.aborted && signal.reason === STOPPED) throw STOPPED;
    if (error instanceof ApiError) throw error;
    throw new ApiError(0, "unreachable", `The answer was cut off (${error.message}).`);
  } finally {
    reader.cancel().catch(() => {});
  }
  if (!last) throw new ApiError(0, "unreachable", "The answer was cut off before its end.");
  if (last.event === "error") throw refusal(last.data.status, last.data);
  return last.data;
}

// The event stream parser of the HTML standard: lines end with CRLF, LF or CR (even split between
// two reads), ":" starts a comment (the API's pings), data lines join with newlines, a blank line
// ends an event (one without data is none). push(text) returns the events it completed.
function serverSentEvents() {
  let pending = "";
  let afterCr = false;
  let name = "";
  let data = [];
  return {
    push(text) {
      if (afterCr && text.startsWith("\n")) text = text.slice(1);
      if (text) afterCr = text.endsWith("\r");
      const lines = (pending + text).split(/\r\n|\r|\n/);
      pending = lines.pop();
      const done = [];
      for (const line of lines) {
        if (!line) {
          if (data.length) done.push({ event: name || "message", data: data.join("\n") });
          name = "";
          data = [];
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        if (field === "event") name = value;
        else if (field === "data") data.push(value);
      }
      return done;
    },
  };
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
  $("toast").className = "toast";
  $("toast").setAttribute("role", "alert");
  $("toast-text").textContent = text;
  $("toast").hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { $("toast").hidden = true; }, 9000);
}

// A notice, not an error: the toast in its quieter style.
function notify(text) {
  $("toast").className = "toast info";
  $("toast").setAttribute("role", "status");
  $("toast-text").textContent = text;
  $("toast").hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { $("toast").hidden = true; }, 9000);
}

function describeConnection() {
  const cfg = settings();
  const where = cfg.custom ? cfg.base : "local API";
  let who = cfg.user ? ` · user ${cfg.user}` : (cfg.custom ? "" : " · local-user");
  if (state.view === "agent") who = agentUser() ? ` · agent ${agentUser()}` : "";
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
    const was = handedOff(state.current);
    state.current = session;
    renderHeader();
    if (was && !handedOff(session) && session.status === STATUS.OPEN) {
      announce("The person handed the conversation back: the bot answers again.");
    }
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
          el("span", { class: "session-label", title: session.name, text: session.name }), badge(session.status),
          handedOff(session) ? el("span", { class: "badge handoff", text: "with a person" }) : null),
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
  const session = known || (await api("GET", `/sessions/${idSegment(sessionId)}`)).session;
  state.current = session;
  localStorage.setItem(sessionKey(), session.session_id);
  state.turns = withOutbox(session.session_id, await loadTurns(session.session_id));
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
    const page = await api("GET", `/sessions/${idSegment(sessionId)}/messages?limit=100${query}`);
    turns = turns.concat(page.messages);
    token = page.next_token;
  } while (token && turns.length < 2000);
  return turns;
}

async function endSession() {
  const session = state.current;
  if (!session) return;
  const ended = (await api("POST", `/sessions/${idSegment(session.session_id)}/end`)).session;
  upsertSession(ended);
  startPolling(ended.session_id);
}

async function deleteSession(session) {
  const ok = window.confirm(
    `Delete "${session.name}"? Its turns and its long-term memories are removed for good.`);
  if (!ok) return;
  await api("DELETE", `/sessions/${idSegment(session.session_id)}`);
  state.goneSessions.add(session.session_id);
  dropOutbox(outboxKey(), session.session_id);
  loadProfile(); // the records drawn only from it go with it
  state.sessions = state.sessions.filter((s) => s.session_id !== session.session_id);
  if (state.current && state.current.session_id === session.session_id) {
    stopPolling();
    state.current = null;
    state.turns = [];
    localStorage.removeItem(sessionKey());
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
      const session = (await api("GET", `/sessions/${idSegment(sessionId)}`)).session;
      upsertSession(session);
      if (session.status === STATUS.ENDED && Date.now() - started < POLL_LIMIT_MS) {
        state.polling = setTimeout(tick, POLL_MS);
      } else {
        state.polling = null;
        // Consolidation draws facts, preferences and a summary from the session.
        if (session.status === STATUS.CONSOLIDATED) loadProfile();
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

// --- talking to a person ------------------------------------------------------------------------

async function talkToPerson() {
  const session = state.current;
  if (!session) return;
  const path = `/sessions/${idSegment(session.session_id)}/handoff`;
  upsertSession((await api("POST", path, {})).session);
  $("message").focus();
}

// While a person has the open conversation and the page is seen: read its newest turns (their
// replies) and its state (the hand-back) every few seconds; otherwise nothing is polled.
function syncHandoffPolling() {
  const on = state.view === "chat" && handedOff(state.current) && document.visibilityState !== "hidden";
  if (!on) {
    clearTimeout(handoffPoll.timer);
    handoffPoll.timer = null;
  } else if (!handoffPoll.timer && !handoffPoll.busy) {
    handoffPoll.timer = setTimeout(pollHandoff, HANDOFF_POLL_MS);
  }
}

async function pollHandoff() {
  handoffPoll.timer = null;
  const sessionId = state.current && state.current.session_id;
  if (!sessionId) return;
  handoffPoll.busy = true;
  try {
    const path = `/sessions/${idSegment(sessionId)}`;
    const [fresh, page] = await Promise.all([
      api("GET", path),
      api("GET", `${path}/messages?order=desc&limit=${HANDOFF_WINDOW}`),
    ]);
    if (state.current && state.current.session_id === sessionId) {
      await mergeTurns(sessionId, page.messages);
      upsertSession(fresh.session);
    }
  } catch (error) {
    // A lost connection or a busy API: the next tick tries again. Anything else is shown.
    if (!worthRetrying(error)) {
      showError(error);
      if (error.status === 404) selectSession(sessionId).catch(() => {});
    }
  } finally {
    handoffPoll.busy = false;
    syncHandoffPolling();
  }
}

// Newly read turns into the conversation (by turn number), with the outbox's messages after
// them; redrawn only when something changed, and a person's new replies are announced.
async function mergeTurns(sessionId, fetched) {
  const before = JSON.stringify(state.turns);
  const stored = new Map(state.turns.filter((t) => t.turn).map((t) => [t.turn, t]));
  const known = Math.max(0, ...stored.keys());
  const oldest = Math.min(...fetched.map((t) => t.turn));
  const fresh = fetched.filter((t) => !stored.has(t.turn) && t.origin === ORIGIN.AGENT);
  let turns;
  if (fetched.length && oldest > known + 1) {
    turns = await loadTurns(sessionId); // more came meanwhile than one poll reads
  } else {
    for (const turn of fetched) stored.set(turn.turn, turn);
    turns = [...stored.values()].sort((a, b) => a.turn - b.turn);
  }
  if (!state.current || state.current.session_id !== sessionId) return;
  // Messages refused for good stay shown (with Retry); the outbox's are added back by withOutbox.
  const waiting = new Set(outboxOf(outboxKey(), sessionId).map((e) => e.client_message_id));
  const local = state.turns.filter((t) => !t.turn && !waiting.has(t.client_message_id));
  state.turns = withOutbox(sessionId, turns.concat(local));
  if (JSON.stringify(state.turns) !== before) renderTurns();
  for (const turn of fresh) announce(`Agent: ${turn.response || ""}`);
}

// Read out by screen readers (the conversation's live region).
function announce(text) {
  $("chat-announce").textContent = text;
}

// --- rendering the session -------------------------------------------------------------------

function renderHeader() {
  const session = state.current;
  const status = $("session-status");
  $("end-session").hidden = !session || session.status !== STATUS.OPEN;
  $("talk-to-person").hidden = !session || session.status !== STATUS.OPEN || handedOff(session);
  $("delete-session").hidden = !session;
  if (!session) {
    $("session-name").textContent = "No session selected";
    status.hidden = true;
    $("session-meta").textContent = "";
    setComposer(false);
    renderBanner(null);
    syncHandoffPolling();
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
  syncHandoffPolling();
}

function renderBanner(session) {
  const banner = $("status-banner");
  banner.replaceChildren();
  banner.className = "banner";
  if (handedOff(session)) {
    // With a person: the user's messages go to them, and their replies show up here.
    const agentName = session.handoff_agent;
    const waiting = session.handoff_state === HANDOFF.WAITING || !agentName;
    banner.hidden = false;
    banner.classList.add("handoff");
    if (waiting) banner.append(el("span", { class: "spinner", "aria-hidden": "true" }));
    banner.append(
      el("strong", { text: waiting ? "Waiting for a person…" : `${agentName} is answering` }),
      el("span", { text: waiting
        ? " Your messages are kept for them; the bot does not answer meanwhile."
        : " Your messages go to them; the bot answers again when they hand the conversation back." }));
    return;
  }
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
  $("message").disabled = !enabled;
  $("send").disabled = !enabled;
  $("message").placeholder = enabled
    ? (handedOff(state.current) ? "Message for the person… (Enter sends)"
      : "Message… (Enter sends, Shift+Enter for a new line; try /past, /verified or /remember)")
    : (state.current ? "This session has ended: start a new session to keep chatting."
      : "Start or pick a session to chat.");
}

function renderTurns() {
  const list = $("messages");
  list.replaceChildren(...state.turns.map(renderTurn));
  $("welcome").hidden = Boolean(state.current);
  if (state.current && !state.turns.length) {
    list.append(el("li", { class: "hint muted" },
      "Say something. Ask ", el("code", { text: "/past …" }), " to recall an ended session, ",
      el("code", { text: "/verified …" }), " to answer from verified documents, or ",
      el("code", { text: "/remember …" }), " to add to what I remember about you."));
  }
  scrollToEnd();
}

function renderTurn(turn) {
  const item = el("li", { class: turn.unsent ? "turn unsent" : "turn",
    dataset: { turn: String(turn.turn ?? ""), message: turn.client_message_id || "" } });
  if (turn.origin === ORIGIN.AGENT) {
    // A person's reply: a turn of its own, with no input of the user's.
    item.classList.add("agent-turn");
    if (turn.input) item.append(userBubble(turn));
    item.append(agentBubble(turn));
    return item;
  }
  item.append(userBubble(turn));
  if (turn.answered_by) {
    // Sent before the bot answered: one answer covers it and the messages after it, shown once,
    // under the last of them. No bot bubble (nor rating) here.
    item.classList.add("stacked");
    item.append(stackedNote(turn));
    return item;
  }
  if (turn.for_agent && !turn.response && !turn.sending && !turn.queued && !turn.unsent && !turn.failed) {
    // Kept for the person who has the conversation: no bot answers it.
    item.append(el("p", { class: "for-agent-note muted small", text: "Sent to a person" }));
    return item;
  }
  // Stored with its answer: shown, even while its own request is still on its way (its answer
  // came with an earlier message's).
  const answered = Boolean(turn.turn && turn.response && !turn.pending);
  const reply = el("div", { class: `bubble assistant intent-${turn.intent || INTENT.CHAT}` });
  if (turn.intent && INTENT_BADGE[turn.intent] && !turn.failed) {
    reply.append(el("span", { class: `intent-badge intent-${turn.intent}`, text: INTENT_BADGE[turn.intent] }));
  }
  const covered = answered ? coveredBy(turn) : [];
  if (covered.length) {
    reply.append(el("p", { class: "stack-span muted small",
      text: `One answer to your messages ${joinNumbers(covered.concat([turn]).map((t) => t.turn))}` }));
  }
  const streaming = !answered && turn.client_message_id && state.streams.get(turn.client_message_id);
  if (streaming) {
    // The answer as it streams in (showStreaming adds to it), then Stop; or what was shown of
    // a stopped one until its stored turn is read back.
    reply.classList.add("streaming");
    reply.append(el("p", { class: streaming.text ? "text" : "text muted typing", text: streaming.text || "thinking…" }));
    if (streaming.sources && streaming.sources.length) reply.append(...renderSources({ ...turn, sources: streaming.sources }));
    reply.append(streaming.stopped
      ? el("p", { class: "stopped-note muted small", text: "Stopped" })
      : el("button", { type: "button", class: "link stop-answer", onclick: () => streaming.stop() }, "Stop"));
    item.append(reply);
    return item;
  }
  if (turn.sending && !answered) {
    reply.append(el("p", { class: "text muted typing",
      text: handedOff(state.current) ? "sending…" : "thinking…" }));
  } else if ((turn.queued || turn.unsent) && !answered) {
    reply.append(...outboxNotice(turn));
  } else if (turn.failed) {
    // Refused for good (a 4xx): sending it again would fail again; it can be edited instead.
    reply.append(el("p", { class: "text error-text", text: `Not sent: ${turn.failed}` }),
      el("button", { type: "button", class: "link", onclick: () => editRefused(turn) }, "Edit and send again"));
  } else if (turn.pending) {
    reply.append(el("p", { class: "text error-text", text: "The model did not answer; your message is kept." }),
      el("button", { type: "button", class: "link", onclick: () => retry(turn) }, "Retry"));
  } else {
    reply.append(el("p", { class: "text", text: turn.response || "" }));
  }
  if (turn.stopped) {
    reply.append(el("p", { class: "stopped-note muted small", text: "Stopped" }));
  }
  if (turn.degraded) {
    reply.append(el("p", { class: "muted small", text: "Answered without long-term memory (unavailable)." }));
  }
  if (turn.sources && turn.sources.length) reply.append(...renderSources(turn));
  if (turn.response && !turn.pending && !turn.unsent && !isHandoffCommand(turn)) reply.append(ratingControl(turn));
  item.append(reply);
  return item;
}

// Stacked messages: the note under a message answered together with later ones.
function stackedNote(turn) {
  const next = turn.turn && turn.answered_by === turn.turn + 1;
  return el("p", { class: "stacked-note muted small", text: next
    ? "Answered together with your next message"
    : `Answered together with your next messages (the answer is under #${turn.answered_by})` });
}

// The messages of the conversation that `turn`'s answer covers besides its own.
function coveredBy(turn) {
  return state.turns.filter((t) => t.answered_by && t.answered_by === turn.turn);
}

function joinNumbers(numbers) {
  const labels = numbers.map((n) => `#${n}`);
  return labels.length < 2 ? labels.join("") : `${labels.slice(0, -1).join(", ")} and ${labels[labels.length - 1]}`;
}

function userBubble(turn) {
  const label = turn.turn ? `#${turn.turn}` : "…";
  return el("div", { class: "bubble user" },
    el("span", { class: "turn-no", title: "turn number", text: label }),
    sentimentMarker(turn),
    el("p", { class: "text", text: turn.input }),
    turn.created_at ? el("time", { class: "muted small", datetime: turn.created_at, text: formatDate(turn.created_at) }) : null);
}

// A reply a person wrote (origin agent), labelled as theirs, in both views.
function agentBubble(turn) {
  return el("div", { class: "bubble agent" },
    turn.turn ? el("span", { class: "turn-no", title: "turn number", text: `#${turn.turn}` }) : null,
    el("span", { class: "role-label", title: turn.agent_id ? `Agent ${turn.agent_id}` : undefined, text: "Agent" }),
    el("p", { class: "text", text: turn.response || "" }),
    turn.created_at ? el("time", { class: "muted small", datetime: turn.created_at, text: formatDate(turn.created_at) }) : null);
}

// The /human command's fixed reply says a person will answer: nothing to rate.
function isHandoffCommand(turn) {
  return Boolean(INTENT.HUMAN) && turn.intent === INTENT.HUMAN;
}

// A person has the conversation (waiting for one, or answering): the bot does not answer.
function handedOff(session) {
  return Boolean(session && session.status === STATUS.OPEN && session.handoff_state);
}

// Rate an answer up or down (PUT /sessions/{id}/turns/{turn}/feedback); pressed shows the
// rating kept with the turn, and a new one replaces it.
function ratingControl(turn) {
  const rated = turn.feedback && turn.feedback.rating;
  // Words, not emoji: a system without an emoji font drew them as empty boxes.
  const button = (rating, text) => el("button", {
    type: "button",
    class: `rating rating-${rating}`,
    "aria-pressed": String(rated === rating),
    text,
    onclick: () => rate(turn, rating),
  });
  return el("div", { class: "rating-control muted small", role: "group", "aria-label": "Rate this answer" },
    button(SCHEMA.Rating.UP, "Good answer"),
    button(SCHEMA.Rating.DOWN, "Bad answer"));
}

async function rate(turn, rating) {
  const session = state.current;
  if (!session) return;
  try {
    const path = `/sessions/${idSegment(session.session_id)}/turns/${turnSegment(turn.turn)}/feedback`;
    const rated = (await api("PUT", path, { rating })).turn;
    state.turns = state.turns.map((t) => (t.turn === rated.turn ? { ...t, feedback: rated.feedback } : t));
    renderTurns();
  } catch (error) {
    showError(error);
  }
}

// The sentiment of what the user said (turn.sentiment: a label and a score from -1 to 1).
function sentimentMarker(turn) {
  const sentiment = turn.sentiment;
  if (!sentiment || !Object.values(SCHEMA.SentimentLabel).includes(sentiment.label)) return null;
  return el("span", {
    class: `sentiment sentiment-${sentiment.label}`,
    title: `Sentiment: ${sentiment.label} (score ${Number(sentiment.score).toFixed(2)})`,
    text: sentiment.label,
  });
}

// What an answer used: past sessions (open them), records (their text and date; show them in
// the panel) and verified passages (cited). The records of the profile every prompt holds are a
// group of their own, closed: listed in full under every answer they would drown what was
// recalled for it. No score is shown: the ones the API gives mix meaning, words and recency
// and mean nothing on their own; the list is best first.
function renderSources(turn) {
  const profile = turn.sources.filter((s) => s.kind === SOURCE.PROFILE);
  const recalled = turn.sources.filter((s) => s.kind !== SOURCE.PROFILE);
  const groups = [];
  if (recalled.length) {
    const label = SOURCES_LABEL[turn.intent] || "Memories used";
    groups.push(el("details", { class: "sources", open: true },
      el("summary", { text: `${label} (${recalled.length})` }),
      el("ul", { class: "source-list" }, recalled.map(sourceItem))));
  }
  if (profile.length) {
    groups.push(el("details", { class: "sources profile-sources" },
      el("summary", { text: `From your profile (${profile.length})`,
        title: "What I remember about you, which every answer is given" }),
      el("ul", { class: "source-list" }, profile.map(sourceItem))));
  }
  return groups;
}

// A source that opens what it names: a record (in the panel) or a session; each kind with the
// set of those gone since, and what became of them.
function linkedSource(source) {
  if (source.kind === SOURCE.RECORD || source.kind === SOURCE.PROFILE) {
    return { kind: "source-record", gone: state.goneRecords, what: "forgotten since",
      title: "Show it in What I remember about you", open: openRecordSource };
  }
  if (source.kind === SOURCE.SESSION) {
    return { kind: "source-session", gone: state.goneSessions, what: "deleted since",
      title: "Open this session", open: openSessionSource };
  }
  return null;
}

function sourceItem(source) {
  const date = source.date
    ? el("span", { class: "muted small", text: ` · ${formatDate(source.date, false)}` }) : null;
  const link = linkedSource(source);
  if (link && link.gone.has(source.id)) return goneItem(source, link.kind, link.what);
  if (link) {
    return el("li", { class: `source ${link.kind}` },
      el("button", {
        type: "button", class: "link", title: link.title,
        onclick: (event) => link.open(event.currentTarget, source).catch(showError),
      }, source.title || source.id), date);
  }
  const cite = source.doc_id ? `${source.doc_id}#${source.passage_id || ""}` : source.id;
  return el("li", { class: "source" },
    el("span", { class: "cite", text: `[${cite}]` }), el("span", { text: ` ${source.title || ""}` }), date);
}

// A source that is gone: its name, struck through, and what became of it.
function goneItem(source, kind, what) {
  return el("li", { class: `source ${kind} gone` },
    el("del", { text: source.title || source.id }),
    el("span", { class: "muted small gone-note", text: ` (${what})` }));
}

// Open a session an answer used; one deleted since says so in place of its link.
async function openSessionSource(button, source) {
  try {
    await selectSession(source.id);
  } catch (error) {
    if (error.status !== 404) throw error;
    state.goneSessions.add(source.id);
    button.closest("li").replaceWith(goneItem(source, "source-session", "deleted since"));
    announce(`The session "${source.title || source.id}" was deleted since.`);
  }
}

async function openRecordSource(button, source) {
  if (await showRecord(source.id)) return;
  state.goneRecords.add(source.id);
  button.closest("li").replaceWith(goneItem(source, "source-record", "forgotten since"));
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

// --- sending: every message goes through the outbox -------------------------------------------
//
// A message is saved in localStorage (the outbox of its user and session) before it is sent, and
// leaves it when the API answered it (2xx) or refused it for good (a 4xx but 408 and 429). A lost
// connection, a 5xx or a 429 keep it there, shown as not sent yet, and it is sent again with the
// same client_message_id (the API's idempotency key: a message it already stored answers with
// its stored turn, so nothing is stored twice) when the browser is back online, on a timer with
// backoff, and when the page loads. Each session's outbox goes in order, so the turns keep the
// order they were typed in; a message goes out once the one before it is stored, without waiting
// for that one's answer (see flushOutbox).

const RETRY_FIRST_MS = 2000;
const RETRY_MAX_MS = 60 * 1000;
const SEND_TIMEOUT_MS = 5 * 60 * 1000; // unsticks a connection that hangs; models can be slow
const STOPPED_POLL_MAX_MS = 8000; // how long a stopped answer is looked for (doubling waits)
const ENDED_NOTICE = "That conversation had ended; continuing in a new one.";

// What a command needs after it, or null: "/past" alone is refused by the API (400); said here,
// before anything is sent, and the text stays in the box.
function commandHint(content) {
  const match = COMMAND.exec(content);
  if (!match || content.slice(match[0].length).trim()) return null;
  const needs = COMMAND_NEEDS[match[1].toLowerCase()];
  return needs ? `/${match[1].toLowerCase()} needs ${needs[0]} after it, for example: ${needs[1]}` : null;
}

function showComposerHint(text) {
  $("composer-hint").textContent = text || "";
  $("composer-hint").hidden = !text;
}

async function submitMessage(event) {
  if (event) event.preventDefault();
  const box = $("message");
  const content = box.value.trim();
  if (!content || !state.current) return;
  const hint = commandHint(content);
  showComposerHint(hint);
  if (hint) {
    box.focus();
    return;
  }
  const sessionId = state.current.session_id;
  const entry = {
    client_message_id: newMessageId(), content, window_turns: windowTurns() ?? null,
  };
  addToOutbox(outboxKey(), sessionId, entry); // throws when storage is full: the text stays typed
  box.value = "";
  state.turns.push({
    input: content, intent: guessIntent(content), client_message_id: entry.client_message_id,
    queued: true,
  });
  renderTurns();
  await flushOutbox(sessionId);
}

// A message the API refused for good: back into the box to be changed, its bubble gone.
function editRefused(turn) {
  state.turns = state.turns.filter((t) => t !== turn);
  renderTurns();
  const box = $("message");
  box.value = box.value.trim() ? `${turn.input}\n${box.value}` : turn.input;
  box.focus();
}

// Retrying with the same client_message_id completes the turn once, never twice.
async function retry(turn) {
  if (!state.current) return;
  const sessionId = state.current.session_id;
  const key = outboxKey();
  if (!turn.client_message_id) turn.client_message_id = newMessageId();
  if (!outboxOf(key, sessionId).some((e) => e.client_message_id === turn.client_message_id)) {
    addToOutbox(key, sessionId, {
      client_message_id: turn.client_message_id, content: turn.input, window_turns: windowTurns() ?? null,
    });
  }
  Object.assign(turn, { failed: null, queued: true, unsent: false });
  renderTurns();
  await flushOutbox(sessionId);
}

// Send a session's outbox, oldest first: one loop per session; a call while it runs wakes it (and
// resumes it after a failure), and it reads the outbox again each time, so it sends new messages
// too.
//
// Messages used to go one at a time, each after the previous one's answer. The API answers the
// messages a user sends before the bot answered together, in one answer (docs/concepts/
// stacked-messages.md); serialized sends would never let a second message reach it while the first one
// waits, so the stack would never form. The order must hold all the same (turn numbers are given
// as messages arrive, and two requests on their way may arrive in any order), so a message goes
// out once the previous one is known to be stored: its request settled, or GET .../messages shows
// it (stored pending, waiting for its answer). A message refused or lost on the way stops what
// follows as before; it is sent again with its client_message_id before anything after it.
const STORED_POLL_FIRST_MS = 250;
const STORED_POLL_MAX_MS = 2000;
const STORED_POLL_WINDOW = 20; // the newest turns read to find a message stored

async function flushOutbox(sessionId) {
  const running = state.flushing.get(sessionId);
  if (running) {
    running.halted = false; // a retry, the browser online again or a new message: go on
    running.wake();
    return;
  }
  const key = outboxKey();
  // sending: client_message_id -> its delivery; halted: wait for a retry before sending more.
  const run = { sending: new Map(), halted: false, wake: () => {} };
  state.flushing.set(sessionId, run);
  try {
    // (Settings switched to another user meanwhile: their messages wait for their own page.)
    while (outboxKey() === key) {
      const entry = run.halted ? null
        : outboxOf(key, sessionId).find((e) => !run.sending.has(e.client_message_id));
      if (entry && navigator.onLine === false) {
        run.halted = true;
        waitToRetry(sessionId);
      } else if (entry) {
        // (A bug of the page's own is shown, and the message kept for a retry.)
        const sent = deliver(key, sessionId, entry).catch((error) => {
          showError(error);
          return "retry";
        });
        const delivery = sent.then((outcome) => {
          run.sending.delete(entry.client_message_id);
          if (outcome === "retry") {
            run.halted = true; // it goes again, first, when retried
            waitToRetry(sessionId);
          } else if (outcome !== "sent" && outcome !== "refused") {
            flushOutbox(outcome); // the session that continues an ended one took its messages
          }
          run.wake();
          return outcome;
        });
        run.sending.set(entry.client_message_id, delivery);
        await untilStored(sessionId, entry, delivery);
        continue;
      }
      if (!run.sending.size) return;
      await new Promise((resolve) => { run.wake = resolve; }); // a delivery settled, or a call
    }
  } finally {
    if (state.flushing.get(sessionId) === run) state.flushing.delete(sessionId);
  }
}

// Until a message on its way is stored: its request settled (answered, refused, lost), or the
// session's newest turns show it. A failed read changes nothing: the request's outcome decides.
async function untilStored(sessionId, entry, delivery) {
  let settled = false;
  const done = delivery.then(() => { settled = true; });
  const path = `/sessions/${idSegment(sessionId)}/messages?order=desc&limit=${STORED_POLL_WINDOW}`;
  for (let delay = STORED_POLL_FIRST_MS; !settled; delay = Math.min(2 * delay, STORED_POLL_MAX_MS)) {
    await Promise.race([done, new Promise((resolve) => setTimeout(resolve, delay))]);
    if (settled) return;
    const page = await Promise.race([done, api("GET", path).catch(() => null)]);
    if (page && (page.messages || []).some((t) => t.client_message_id === entry.client_message_id)) return;
  }
}

// Send one message; says what became of it: "sent", "refused", "retry", or the id of the
// session that continues the ended one it was sent to (the message moved to its outbox).
async function deliver(key, sessionId, entry) {
  const body = { content: entry.content, client_message_id: entry.client_message_id };
  if (entry.window_turns !== null && entry.window_turns !== undefined) body.window_turns = entry.window_turns;
  // The answer streams in as the model writes it (shown by renderTurn from state.streams); Stop
  // aborts it. The timeout unsticks a request that never gets its answer's first byte.
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error("timed out")), SEND_TIMEOUT_MS);
  const shown = { text: "", sources: null, stop: () => controller.abort(STOPPED) };
  state.streams.set(entry.client_message_id, shown);
  const onTheirWay = state.inFlight.get(sessionId) || new Set();
  state.inFlight.set(sessionId, onTheirWay.add(entry.client_message_id));
  markOutboxTurns(sessionId);
  let data;
  try {
    data = await streamMessage(`/sessions/${idSegment(sessionId)}/messages/stream`, body, {
      signal: controller.signal,
      onOpen: () => clearTimeout(timer),
      onEvent: (name, event) => {
        if (name === "delta") shown.text += event.text;
        else if (name === "memory") shown.sources = event.sources;
        showStreaming(entry.client_message_id);
      },
    });
  } catch (error) {
    if (error === STOPPED) {
      removeFromOutbox(key, sessionId, entry.client_message_id);
      shown.stopped = true;
      showStreaming(entry.client_message_id);
      showStopped(sessionId, entry.client_message_id);
      return "sent";
    }
    state.streams.delete(entry.client_message_id);
    if (worthRetrying(error)) return "retry";
    let refusal = error;
    if (error.code === "session_ended") {
      try {
        return await continueEnded(key, sessionId, entry);
      } catch (failure) {
        if (worthRetrying(failure)) return "retry";
        refusal = failure;
      }
    }
    removeFromOutbox(key, sessionId, entry.client_message_id);
    showRefusal(sessionId, entry, refusal);
    return "refused";
  } finally {
    clearTimeout(timer);
    onTheirWay.delete(entry.client_message_id);
    if (!onTheirWay.size && state.inFlight.get(sessionId) === onTheirWay) state.inFlight.delete(sessionId);
  }
  state.streams.delete(entry.client_message_id);
  removeFromOutbox(key, sessionId, entry.client_message_id);
  if (data.answer && data.answer.client_message_id && !data.answer.pending) {
    // The later message whose answer covers this one is stored and answered, its own request
    // maybe still on its way: nothing of it is left to send.
    removeFromOutbox(key, sessionId, data.answer.client_message_id);
  }
  state.retryAttempt = 0;
  showAnswer(sessionId, data.turn, data.answer);
  return "sent";
}

// A streamed answer as it comes, in its bubble (the rest of the page as it is: a Stop button
// under the pointer stays where it is).
function showStreaming(clientMessageId) {
  const item = [...document.querySelectorAll("#messages li.turn")]
    .find((li) => li.dataset.message === clientMessageId);
  const turn = state.turns.find((t) => t.client_message_id === clientMessageId);
  if (!item || !turn) return;
  const bubble = item.querySelector(".bubble.assistant");
  if (!bubble || !bubble.classList.contains("streaming") || state.streams.get(clientMessageId).stopped) {
    renderTurns();
    return;
  }
  const shown = state.streams.get(clientMessageId);
  const text = bubble.querySelector(".text");
  text.className = "text";
  text.textContent = shown.text;
  if (shown.sources && !bubble.querySelector(".sources")) {
    bubble.querySelector(".stop-answer").before(...renderSources({ ...turn, sources: shown.sources }));
  }
  scrollToEnd();
}

// A stopped answer is stored (what had been sent, marked stopped) once the server has seen the
// reader go: the page shows what it had until the stored turn is read back in its place.
async function showStopped(sessionId, clientMessageId) {
  const path = `/sessions/${idSegment(sessionId)}/messages?order=desc&limit=${STORED_POLL_WINDOW}`;
  for (let delay = STORED_POLL_FIRST_MS; delay <= STOPPED_POLL_MAX_MS; delay *= 2) {
    await new Promise((resolve) => setTimeout(resolve, delay));
    const page = await api("GET", path).catch(() => null);
    const stored = page && (page.messages || []).find((t) => t.client_message_id === clientMessageId);
    if (stored && !stored.pending) {
      state.streams.delete(clientMessageId);
      showAnswer(sessionId, stored, null);
      return;
    }
  }
}

// Lost on the way (no answer, 408, 429, 5xx): the API may take it later. Any other 4xx is final.
function worthRetrying(error) {
  const status = error instanceof ApiError ? error.status : 0;
  return status === 0 || status === 408 || status === 429 || status >= 500;
}

// The session had ended (the idle sweeper ends it while the user is away): rather than show the
// 409, continue the conversation in a new session and send the message there. POST /sessions
// with continue_from is the API's continuation (the new session keeps a name the user gave,
// links back with continued_from, and while the ended session exists the model sees its rolling
// summary and last turns); an API without it refuses the field (400), and a session deleted
// meanwhile is a 404: then a plain new session. The ended session's unsent messages move to the new one, ids and order kept
// (from `entry` on, but those on their way to the ended session: they were stored there); a
// message refused the same way later goes to the same new session.
async function continueEnded(key, endedId, entry) {
  const stay = new Set(state.inFlight.get(endedId) || []);
  stay.delete(entry.client_message_id);
  const known = state.continued.get(endedId);
  if (known) {
    moveOutbox(key, endedId, known, entry.client_message_id, stay);
    return known;
  }
  let session;
  try {
    session = (await api("POST", "/sessions", { continue_from: endedId })).session;
  } catch (error) {
    if (error.status !== 400 && error.status !== 404) throw error;
    session = (await api("POST", "/sessions", {})).session;
  }
  state.continued.set(endedId, session.session_id);
  moveOutbox(key, endedId, session.session_id, entry.client_message_id, stay);
  upsertSession(session);
  api("GET", `/sessions/${idSegment(endedId)}`)
    .then((fresh) => upsertSession(fresh.session)).catch(() => {});
  if (state.current && state.current.session_id === endedId) {
    await selectSession(session.session_id, session).catch(showError);
  }
  notify(ENDED_NOTICE);
  return session.session_id;
}

// Try again later: 2 s after the first failure, doubling up to a minute until a message gets
// through; the browser coming back online, "Retry now" or a page load try at once.
function waitToRetry(sessionId) {
  markOutboxTurns(sessionId, { unsent: true });
  if (state.retryTimer) return;
  const delay = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** state.retryAttempt);
  state.retryAttempt += 1;
  state.retryTimer = setTimeout(() => {
    state.retryTimer = null;
    flushOutboxes();
  }, delay);
}

// Every outbox of the user, the open conversation's first; each session keeps its own order.
function flushOutboxes({ now = false } = {}) {
  if (now) state.retryAttempt = 0;
  clearTimeout(state.retryTimer);
  state.retryTimer = null;
  const current = state.current && state.current.session_id;
  const ids = Object.keys(readOutboxes(outboxKey()))
    .sort((a, b) => Number(b === current) - Number(a === current));
  return Promise.all(ids.map((id) => flushOutbox(id)));
}

// The open conversation's outbox messages as the page shows them: the ones on their way, the ones
// waiting behind them, and (after a failed attempt) the ones not sent yet.
function markOutboxTurns(sessionId, { unsent = false } = {}) {
  if (!state.current || state.current.session_id !== sessionId) return;
  const inFlight = state.inFlight.get(sessionId) || new Set();
  for (const entry of outboxOf(outboxKey(), sessionId)) {
    const turn = state.turns.find((t) => t.client_message_id === entry.client_message_id);
    if (!turn) continue;
    if (inFlight.has(entry.client_message_id)) {
      Object.assign(turn, { sending: true, queued: false, unsent: false, failed: null });
    } else if (unsent) {
      Object.assign(turn, { sending: false, queued: false, unsent: true });
    } else if (!turn.unsent) {
      Object.assign(turn, { sending: false, queued: true });
    }
  }
  renderTurns();
}

// A session's stored turns with its unsent messages. A message whose turn is stored complete
// (the answer was lost on the way) leaves the outbox; one stored pending or not stored is shown
// not sent yet, or on its way.
function withOutbox(sessionId, turns) {
  const key = outboxKey();
  const inFlight = state.inFlight.get(sessionId) || new Set();
  const run = state.flushing.get(sessionId);
  const waiting = Boolean(run && !run.halted);
  for (const entry of outboxOf(key, sessionId)) {
    const id = entry.client_message_id;
    const stored = turns.find((t) => t.client_message_id === id);
    const sending = inFlight.has(id);
    if (stored && !stored.pending && !sending) {
      removeFromOutbox(key, sessionId, id);
      continue;
    }
    const turn = stored || { input: entry.content, intent: guessIntent(entry.content), client_message_id: id };
    if (!stored) turns.push(turn);
    Object.assign(turn, { sending, queued: !sending && waiting, unsent: !sending && !waiting });
  }
  return turns;
}

function outboxNotice(turn) {
  if (!turn.unsent) return [el("p", { class: "text muted outbox-state", text: "waiting to send…" })];
  return [el("p", { class: "text outbox-state unsent-text", text: "not sent yet — will retry" }),
    el("button", { type: "button", class: "link", onclick: () => flushOutboxes({ now: true }) }, "Retry now")];
}

// A message's stored turn, and the later turn that answered it together with it (stacked
// messages: `answer`, when turn.answered_by), in place of what the page showed for them.
function showAnswer(sessionId, turn, answer) {
  const here = state.current && state.current.session_id === sessionId;
  const session = here ? state.current : state.sessions.find((s) => s.session_id === sessionId);
  const shown = answer ? [turn, answer] : [turn];
  if (here) {
    const firstChat = shown.some((t) => t.intent === INTENT.CHAT)
      && !state.turns.some((t) => t.turn && t.intent === INTENT.CHAT && !shown.some((s) => s.turn === t.turn));
    for (const t of shown) placeTurn(t);
    renderTurns();
    if (firstChat || shown.some(mayHandOff)) {
      // The first message with something in it names a session that has no name of its own;
      // a turn that may have handed the session to a person changes its state.
      api("GET", `/sessions/${idSegment(sessionId)}`)
        .then((fresh) => upsertSession(fresh.session)).catch(() => {});
    }
  }
  if (session) {
    session.num_turns = Math.max(session.num_turns, ...shown.map((t) => t.turn));
    upsertSession(session);
  }
  if (turn.intent === INTENT.REMEMBER && !turn.pending) {
    loadProfile({ announce: "Added what you asked me to remember." });
  }
}

// A stored turn in the conversation: in place of the message it was (by client_message_id) or of
// the same turn, else before the messages not stored yet.
function placeTurn(turn) {
  let index = state.turns.findIndex((t) => t.client_message_id && t.client_message_id === turn.client_message_id);
  if (index < 0) index = state.turns.findIndex((t) => t.turn && t.turn === turn.turn);
  if (index >= 0) {
    state.turns[index] = turn;
    return;
  }
  const after = state.turns.findIndex((t) => !t.turn || t.turn > turn.turn);
  if (after < 0) state.turns.push(turn);
  else state.turns.splice(after, 0, turn);
}

// The turns after which the session may be with a person: /human, a message kept for one, and
// the automatic rules' triggers (/verified that found nothing, a negative message).
function mayHandOff(turn) {
  const negative = turn.sentiment && turn.sentiment.label === SCHEMA.SentimentLabel.NEGATIVE;
  const unverified = turn.intent === INTENT.VERIFIED && !(turn.sources && turn.sources.length);
  return Boolean(turn.for_agent || isHandoffCommand(turn) || (turn.input || "").startsWith("/human")
    || negative || unverified);
}

function showRefusal(sessionId, entry, error) {
  let shown = false;
  if (state.current && state.current.session_id === sessionId) {
    const turn = state.turns.find((t) => t.client_message_id === entry.client_message_id);
    if (turn) Object.assign(turn, { sending: false, queued: false, unsent: false, failed: error.message });
    shown = Boolean(turn);
    renderTurns();
    if (error.status === 409 || error.status === 404) {
      // Deleted meanwhile (another tab), or another conflict: show what is true now.
      selectSession(sessionId).catch(() => {});
      shown = false;
    }
  }
  if (!shown) showError(error); // the message's bubble says it when it is on screen
}

// --- the outbox in localStorage, and the conversation the page was in -------------------------
// Both are kept per API and user: {session_id: [{client_message_id, content, window_turns}]}.

function whose() {
  const cfg = settings();
  return `${cfg.base} ${cfg.user || tokenSubject(cfg.token)}`;
}

// The caller of a deployed API is the token's subject (Settings may hold several users' tokens
// over time); no check here, the API verifies the token.
function tokenSubject(token) {
  try {
    const payload = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    return String(JSON.parse(atob(payload)).sub || "");
  } catch {
    return "";
  }
}

function sessionKey() {
  return `${STORE.session}|${whose()}`;
}

function outboxKey() {
  return `${STORE.outbox}|${whose()}`;
}

function readOutboxes(key) {
  try {
    const data = JSON.parse(localStorage.getItem(key) || "{}");
    return data && typeof data === "object" && !Array.isArray(data) ? data : {};
  } catch {
    return {};
  }
}

function writeOutboxes(key, outboxes) {
  for (const [id, entries] of Object.entries(outboxes)) {
    if (!Array.isArray(entries) || !entries.length) delete outboxes[id];
  }
  if (Object.keys(outboxes).length) localStorage.setItem(key, JSON.stringify(outboxes));
  else localStorage.removeItem(key);
}

function outboxOf(key, sessionId) {
  const entries = readOutboxes(key)[sessionId];
  return Array.isArray(entries) ? entries : [];
}

function addToOutbox(key, sessionId, entry) {
  const outboxes = readOutboxes(key);
  outboxes[sessionId] = outboxOf(key, sessionId).concat([entry]);
  writeOutboxes(key, outboxes);
}

function removeFromOutbox(key, sessionId, clientMessageId) {
  const outboxes = readOutboxes(key);
  outboxes[sessionId] = outboxOf(key, sessionId).filter((e) => e.client_message_id !== clientMessageId);
  writeOutboxes(key, outboxes);
}

// A session's messages from `fromMessageId` on (all when it is not there), but those in `stay`,
// move to another session.
function moveOutbox(key, fromId, toId, fromMessageId, stay = new Set()) {
  const outboxes = readOutboxes(key);
  const entries = outboxOf(key, fromId);
  const at = Math.max(0, entries.findIndex((e) => e.client_message_id === fromMessageId));
  const moves = (e, i) => i >= at && !stay.has(e.client_message_id);
  outboxes[toId] = outboxOf(key, toId).concat(entries.filter(moves));
  outboxes[fromId] = entries.filter((e, i) => !moves(e, i));
  writeOutboxes(key, outboxes);
}

function dropOutbox(key, sessionId) {
  const outboxes = readOutboxes(key);
  delete outboxes[sessionId];
  writeOutboxes(key, outboxes);
}

function guessIntent(content) {
  const match = COMMAND.exec(content);
  const intent = match && match[1].toLowerCase();
  return intent && Object.values(INTENT).includes(intent) ? intent : INTENT.CHAT;
}

// --- long-term memory search ---------------------------------------------------------------

// Both kinds of long-term memory: what I remember about you (records, POST /memories/records/
// search: facts, preferences, open questions) and past sessions (GET /memories). Each answers
// best match first; neither gives a score that means anything alone, so none is shown. A
// deployment without one of them still shows the other.
const SEARCH_RECORDS = 5;
const SEARCH_SESSIONS = 5;

async function searchMemories(event) {
  event.preventDefault();
  const query = $("memory-query").value.trim();
  if (!query) return;
  const [records, sessions] = await Promise.allSettled([
    // Summaries are past sessions again: asked for a few more, shown apart from them.
    api("POST", "/memories/records/search", { query, limit: SEARCH_RECORDS + 5 }),
    api("GET", `/memories?q=${encodeURIComponent(query)}&k=${SEARCH_SESSIONS}`),
  ]);
  if (records.status === "rejected" && sessions.status === "rejected") throw sessions.reason;
  const found = records.status === "fulfilled"
    ? records.value.records.filter((r) => r.type !== RECORD_TYPE.SUMMARY).slice(0, SEARCH_RECORDS) : [];
  const memories = sessions.status === "fulfilled" ? sessions.value.memories : [];
  const list = $("memory-list");
  list.replaceChildren();
  if (found.length) {
    list.append(el("section", { class: "memory-group", "aria-label": "What I remember about you" },
      el("h3", { text: "What I remember about you" }),
      el("ul", { class: "memory-list" }, found.map((record) => el("li", { class: "memory memory-record" },
        el("span", { class: `badge record-type type-${record.type}`, text: RECORD_TYPE_TEXT[record.type] || record.type }),
        " ",
        el("button", {
          type: "button", class: "link memory-record-text", title: "Show it in What I remember about you",
          onclick: () => showRecord(record.record_id).catch(showError),
        }, record.text),
        el("span", { class: "muted small", text: ` · since ${formatDate(record.created_at, false)}` }))))));
  }
  if (memories.length) {
    list.append(el("section", { class: "memory-group", "aria-label": "Past sessions" },
      el("h3", { text: "Past sessions" }),
      el("ul", { class: "memory-list" }, memories.map((memory) => {
        const snippet = (memory.snippets && memory.snippets[0]) || "";
        return el("li", { class: "memory" },
          el("button", {
            type: "button", class: "link memory-title",
            onclick: () => selectSession(memory.session_id).catch(showError),
          }, memory.title || memory.session_id),
          el("span", { class: "muted small", text: ` · ${formatDate(memory.date, false)}` }),
          el("p", { class: "snippet small", text: snippet.length > 220 ? `${snippet.slice(0, 220)}…` : snippet }));
      }))));
  }
  if (!found.length && !memories.length) {
    list.append(el("p", { class: "muted", text: "Nothing remembered about that yet. What you tell me to " +
      "remember shows here at once; ended sessions once they are consolidated." }));
  }
  for (const [what, result] of [["what I remember", records], ["past sessions", sessions]]) {
    if (result.status === "rejected") {
      list.append(el("p", { class: "muted small error-text", text: `Could not search ${what}: ${result.reason.message}` }));
    }
  }
  $("memory-results").hidden = false;
}

// --- what I remember about you (the records API) -----------------------------------------------

async function loadRecordPages() {
  let records = [];
  let token = null;
  do {
    const next = token ? `&next_token=${encodeURIComponent(token)}` : "";
    const page = await api("GET", `/memories/records?limit=${RECORDS_PAGE}${next}`);
    records = records.concat(page.records);
    token = page.next_token;
  } while (token && records.length < RECORDS_CAP);
  return { records, complete: !token };
}

// Reload the caller's records. Errors show in the panel, not as a toast: the rest of the page
// works without them (a deployment without the records API). Calls made while one is under
// way wait for it, then load again, so the last call sees the latest state.
function loadProfile({ announce } = {}) {
  if (state.profileLoading) {
    return state.profileLoading.then(() => loadProfile({ announce }));
  }
  const asked = settings();
  state.profileLoading = (async () => {
    try {
      const { records, complete } = await loadRecordPages();
      const now = settings();
      if (now.base !== asked.base || now.user !== asked.user) return; // another user meanwhile
      state.records = records;
      state.recordsLoaded = true;
      state.recordsComplete = complete;
      renderProfile();
      if (announce) announceProfile(announce);
    } catch (error) {
      state.records = [];
      state.recordsLoaded = false;
      renderProfile();
      announceProfile(`Could not load what I remember: ${error.message}`, true);
    } finally {
      state.profileLoading = null;
    }
  })();
  return state.profileLoading;
}

// The panel's live region: what just changed (screen readers read it out).
function announceProfile(text, failed = false) {
  const status = $("profile-status");
  status.textContent = text;
  status.classList.toggle("error-text", failed);
}

function isSuperseded(record) {
  return record.status === RECORD_STATUS.SUPERSEDED;
}

// Current records, each with the older ones it superseded (following superseded_by chains);
// a superseded record whose successor is gone stays on its own, as history.
function groupRecords(records) {
  const byId = new Map(records.map((r) => [r.record_id, r]));
  const headOf = (record) => {
    let at = record;
    const seen = new Set([at.record_id]);
    while (at.superseded_by && byId.has(at.superseded_by) && !seen.has(at.superseded_by)) {
      at = byId.get(at.superseded_by);
      seen.add(at.record_id);
    }
    return at;
  };
  const groups = new Map();
  for (const record of records) {
    const head = headOf(record);
    if (!groups.has(head.record_id)) groups.set(head.record_id, { record: head, history: [] });
    if (head !== record) groups.get(head.record_id).history.push(record);
  }
  const until = (r) => r.valid_until || r.updated_at || r.created_at || "";
  for (const group of groups.values()) group.history.sort((a, b) => until(b).localeCompare(until(a)));
  // What holds now first (newest first, as listed), then history whose successor is gone.
  return [...groups.values()].sort((a, b) => Number(isSuperseded(a.record)) - Number(isSuperseded(b.record)));
}

function renderProfile() {
  const typing = document.activeElement && document.activeElement.closest
    && document.activeElement.closest(".record-editor") ? document.activeElement : null;
  const caret = typing && typing.tagName === "TEXTAREA" ? typing.selectionStart : null;
  const profile = state.records.filter((r) => r.type !== RECORD_TYPE.SUMMARY);
  const summaries = state.records.filter((r) => r.type === RECORD_TYPE.SUMMARY);
  const list = $("record-list");
  list.replaceChildren(...groupRecords(profile).map((g) => renderRecord(g.record, g.history)));
  if (!profile.length && state.recordsLoaded) {
    list.append(el("li", { class: "muted small empty",
      text: "Nothing yet. Tell me something below, use /remember in the chat, or end a session." }));
  }
  if (!state.recordsComplete) {
    list.append(el("li", { class: "muted small empty", text: `Showing the newest ${RECORDS_CAP}.` }));
  }
  $("summary-list").replaceChildren(...groupRecords(summaries).map((g) => renderRecord(g.record, g.history)));
  $("summaries").hidden = !summaries.length;
  $("summaries-label").textContent = `Session summaries (${summaries.length})`;
  if (typing && state.editing) {
    // Drawn again while a correction is typed (a refresh): keep the caret where it was.
    const box = focusRecord(state.editing, "textarea");
    if (box && caret !== null) box.setSelectionRange(caret, caret);
  }
}

function recordMeta(record) {
  const meta = el("p", { class: "muted small record-meta" });
  if (isSuperseded(record)) {
    meta.append(el("time", { datetime: record.created_at, text: formatDate(record.created_at, false) }),
      " – until ", el("time", {
        datetime: record.valid_until || record.updated_at,
        text: formatDate(record.valid_until || record.updated_at, false),
      }));
  } else {
    meta.append("since ", el("time", { datetime: record.created_at, text: formatDate(record.created_at, false) }));
  }
  const sessions = new Map();
  for (const p of record.provenance || []) if (!sessions.has(p.session_id)) sessions.set(p.session_id, p);
  if (sessions.size) {
    meta.append(" · from the session of ");
    [...sessions.values()].forEach((p, i) => {
      if (i) meta.append(", ");
      meta.append(el("button", {
        type: "button", class: "link", title: "Open the session it was drawn from",
        onclick: () => selectSession(p.session_id).catch(showError),
      }, formatDate(p.date, false)));
    });
  } else if (record.origin === RECORD_ORIGIN.STATED) {
    meta.append(" · you told me");
  }
  if (record.origin === RECORD_ORIGIN.CORRECTED) meta.append(` · corrected ${formatDate(record.updated_at, false)}`);
  return meta;
}

function renderRecord(record, history = []) {
  const superseded = isSuperseded(record);
  const editing = state.editing === record.record_id;
  const item = el("li", {
    class: superseded ? "record superseded" : "record",
    dataset: { recordId: record.record_id },
    tabindex: "-1",
  },
    el("div", { class: "record-line" },
      el("span", { class: `badge record-type type-${record.type}`, text: RECORD_TYPE_TEXT[record.type] || record.type }),
      superseded ? el("span", { class: "muted small", text: "no longer true" }) : null),
    editing ? renderEditor(record) : el("p", { class: "record-text", text: record.text }),
    recordMeta(record),
    editing ? null : el("div", { class: "record-actions" },
      superseded ? null : el("button", {
        type: "button", class: "link", "aria-label": `Correct: ${record.text}`,
        onclick: () => startEditing(record),
      }, "Correct"),
      el("button", {
        type: "button", class: "link danger-link", "aria-label": `Delete: ${record.text}`,
        onclick: () => deleteRecord(record).catch(showError),
      }, "Delete")));
  if (history.length) {
    item.append(el("details", { class: "record-history" },
      el("summary", { text: `Earlier (${history.length})` }),
      el("ul", { class: "record-list" }, history.map((old) => renderRecord(old)))));
  }
  return item;
}

function renderEditor(record) {
  const id = `edit-${record.record_id.replace(/[^A-Za-z0-9_-]/g, "_")}`;
  const box = el("textarea", { id, rows: "3", maxlength: "1000", required: true });
  box.value = state.draft;
  box.addEventListener("input", () => { state.draft = box.value; });
  const form = el("form", {
    class: "record-editor",
    onsubmit: (event) => {
      event.preventDefault();
      correctRecord(record, box.value).catch(showError);
    },
  },
    el("label", { for: id, class: "visually-hidden", text: "Corrected text" }),
    box,
    el("div", { class: "inline" },
      el("button", { type: "submit", class: "primary" }, "Save"),
      el("button", { type: "button", onclick: () => stopEditing(record) }, "Cancel")));
  box.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.preventDefault();
      stopEditing(record);
    } else if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  return form;
}

function startEditing(record) {
  state.editing = record.record_id;
  state.draft = record.text;
  renderProfile();
  const box = focusRecord(record.record_id, "textarea");
  if (box) box.setSelectionRange(box.value.length, box.value.length);
}

function stopEditing(record) {
  state.editing = null;
  renderProfile();
  focusRecord(record.record_id, ".record-actions button");
}

async function correctRecord(record, text) {
  const corrected = text.trim();
  if (!corrected) return;
  if (corrected === record.text) {
    stopEditing(record);
    return;
  }
  const path = `/memories/records/${idSegment(record.record_id)}`;
  const updated = (await api("PATCH", path, { text: corrected })).record;
  state.records = state.records.map((r) => (r.record_id === updated.record_id ? updated : r));
  stopEditing(updated);
  announceProfile(`Corrected: ${updated.text}`);
}

async function deleteRecord(record) {
  const ok = window.confirm(
    `Forget "${record.text}"? It is deleted for good and no answer will use it again.`);
  if (!ok) return;
  const item = document.querySelector(`#profile [data-record-id="${CSS.escape(record.record_id)}"]`);
  const next = item && item.nextElementSibling ? item.nextElementSibling.dataset.recordId : null;
  await api("DELETE", `/memories/records/${idSegment(record.record_id)}`);
  if (state.editing === record.record_id) state.editing = null;
  // What it had superseded stays, as history on its own: the server's list says how.
  await loadProfile({ announce: `Forgotten: ${record.text}` });
  if (!(next && focusRecord(next))) $("record-text").focus();
}

async function addRecord(event) {
  event.preventDefault();
  const box = $("record-text");
  const text = box.value.trim();
  if (!text) return;
  const body = { text };
  if ($("record-type").value) body.type = $("record-type").value;
  $("record-save").disabled = true;
  try {
    const record = (await api("POST", "/memories/records", body)).record;
    box.value = "";
    $("record-type").value = "";
    await loadProfile({
      announce: `Remembered (${RECORD_TYPE_TEXT[record.type] || record.type}): ${record.text}`,
    });
  } finally {
    $("record-save").disabled = false;
  }
}

// The record's item in the panel, or an element in it; focused.
function focusRecord(recordId, selector) {
  const item = document.querySelector(`#profile [data-record-id="${CSS.escape(recordId)}"]`);
  if (!item) return null;
  const target = (selector && item.querySelector(selector)) || item;
  target.focus();
  return target;
}

// A record an answer used: bring it into view in the panel (opening what hides it).
async function showRecord(recordId) {
  if (!state.records.some((r) => r.record_id === recordId)) await loadProfile();
  const item = document.querySelector(`#profile [data-record-id="${CSS.escape(recordId)}"]`);
  if (!item) {
    announceProfile("That memory is no longer stored.");
    return false;
  }
  for (let box = item.closest("details"); box; box = box.parentElement.closest("details")) box.open = true;
  if (window.matchMedia("(max-width: 760px)").matches) toggleSidebar(true);
  item.scrollIntoView({ block: "nearest" });
  item.focus();
  item.classList.remove("flash");
  void item.offsetWidth; // restarts the highlight
  item.classList.add("flash");
  return true;
}

function fillRecordTypes() {
  const select = $("record-type");
  for (const type of [RECORD_TYPE.FACT, RECORD_TYPE.PREFERENCE]) {
    select.append(el("option", { value: type, text: RECORD_TYPE_TEXT[type] }));
  }
}

// --- the agent desk (?view=agent) ---------------------------------------------------------------
//
// A person who answers sessions handed off: the queue (GET /agent/sessions, oldest first, waiting
// and answered), one session with its whole conversation, a reply (POST .../messages) and the
// hand-back (POST .../handback). In local mode the desk calls as the agent id of Settings
// (default `agent`, local/run's default --agents); a caller who is not an agent gets a 403,
// explained in place of the desk.

const desk = {
  waiting: [],
  active: [],
  current: null, // the open session
  turns: [],
  drawn: "", // the conversation as last drawn (redrawn only when it changed)
  timer: null,
  busy: false,
  denied: false,
  reply: null, // {content, client_message_id} of a reply not yet stored: a retry reuses its id
};

// The desk's X-User-Id: the agent id of Settings; in local mode `agent` when none is set (a
// deployed API knows its caller from the token, and its CORS rules refuse the header).
function agentUser() {
  const stored = (localStorage.getItem(STORE.agentUser) || "").trim();
  return stored || (settings().custom ? "" : LOCAL_AGENT);
}

function deskApi(method, path, body) {
  return api(method, path, body, { user: agentUser() || null });
}

async function startDesk() {
  describeConnection();
  $("user-view").hidden = true;
  $("agent-view").hidden = false;
  document.title = "Agent desk · Chat memory";
  document.querySelector(".skip-link").setAttribute("href", "#agent-reply");
  $("toggle-sidebar").setAttribute("aria-controls", "queue");
  $("toggle-sidebar").setAttribute("aria-label", "Show the queue");
  $("agent-who").textContent = agentUser() ? `Replying as ${agentUser()}` : "";
  desk.denied = false;
  $("agent-denied").hidden = true;
  renderDeskSession();
  await deskTick();
}

// One round: the queue, and the open session (its new messages, its state).
async function deskTick() {
  clearTimeout(desk.timer);
  desk.timer = null;
  desk.busy = true;
  try {
    await refreshQueue();
    if (handedOff(desk.current)) await loadDeskSession(desk.current.session_id);
  } catch (error) {
    if (!deskRefused(error) && !worthRetrying(error)) showError(error);
  } finally {
    desk.busy = false;
    syncDeskPolling();
  }
}

function syncDeskPolling() {
  const on = state.view === "agent" && !desk.denied && document.visibilityState !== "hidden";
  if (!on) {
    clearTimeout(desk.timer);
    desk.timer = null;
  } else if (!desk.timer && !desk.busy) {
    desk.timer = setTimeout(deskTick, AGENT_POLL_MS);
  }
}

// A 403 from an agent route: this caller is not an agent. Say so instead of a broken desk.
function deskRefused(error) {
  if (!(error instanceof ApiError) || error.status !== 403) return false;
  desk.denied = true;
  desk.waiting = [];
  desk.active = [];
  desk.current = null;
  desk.turns = [];
  const who = agentUser() ? `“${agentUser()}”` : "This caller";
  $("agent-denied-who").textContent =
    `${who} is not an agent: the API refused the agent routes (${error.code}, HTTP 403).`;
  $("agent-denied").hidden = false;
  $("queue-status").textContent = "Not an agent: no queue to show.";
  renderQueue();
  renderDeskSession();
  syncDeskPolling();
  return true;
}

async function queuePage(handoffState) {
  const data = await deskApi("GET", `/agent/sessions?state=${encodeURIComponent(handoffState)}&limit=50`);
  return data.sessions || [];
}

async function refreshQueue() {
  const [waiting, active] = await Promise.all([queuePage(HANDOFF.WAITING), queuePage(HANDOFF.ACTIVE)]);
  desk.waiting = waiting;
  desk.active = active;
  $("queue-status").textContent = `${plural(waiting.length, "session")} waiting, ${active.length} answered.`;
  renderQueue();
}

function renderQueue() {
  const draw = (list, sessions, empty) => {
    list.replaceChildren();
    if (!sessions.length && empty) list.append(el("li", { class: "muted empty", text: empty }));
    for (const session of sessions) {
      const selected = desk.current && desk.current.session_id === session.session_id;
      const reason = REASON_TEXT[session.handoff_reason] || session.handoff_reason || "";
      const who = session.user_id ? `${session.user_id} · ` : "";
      const agentName = session.handoff_agent ? ` · ${session.handoff_agent}` : "";
      list.append(el("li", { class: selected ? "session selected" : "session" },
        el("button", {
          type: "button",
          class: "session-open",
          "aria-current": selected ? "true" : undefined,
          onclick: () => openDeskSession(session.session_id).catch(showError),
        },
          el("span", { class: "session-line" },
            el("span", { class: "session-label", title: session.name, text: session.name }), handoffBadge(session)),
          el("span", { class: "session-sub muted small",
            text: `${who}since ${formatDate(session.handoff_at)}${agentName}` }),
          reason ? el("span", { class: "session-sub muted small", text: reason }) : null)));
    }
  };
  draw($("queue-waiting"), desk.waiting, desk.denied ? "" : "No one is waiting.");
  draw($("queue-active"), desk.active, desk.denied ? "" : "None.");
}

function handoffBadge(session) {
  if (session.handoff_state === HANDOFF.WAITING) return el("span", { class: "badge handoff", text: "waiting" });
  if (session.handoff_state === HANDOFF.ACTIVE) return el("span", { class: "badge handoff-active", text: "answered" });
  return el("span", { class: "badge", text: "with the bot" });
}

async function openDeskSession(sessionId) {
  desk.reply = null;
  await loadDeskSession(sessionId, { opening: true });
  renderQueue();
  closeSidebarOnNarrow();
  if (!$("agent-reply").disabled) $("agent-reply").focus();
}

// The session and its whole conversation (GET /agent/sessions/{id} pages back from the newest).
async function loadDeskSession(sessionId, { opening = false } = {}) {
  const path = `/agent/sessions/${idSegment(sessionId)}`;
  let data;
  try {
    data = await deskApi("GET", `${path}?limit=100`);
  } catch (error) {
    if (deskRefused(error)) return;
    if (error.status === 404 && !opening && desk.current && desk.current.session_id === sessionId) {
      // No longer handed off (another agent handed it back): shown as the bot's again.
      desk.current = { ...desk.current, handoff_state: null };
      renderDeskSession();
      return;
    }
    throw error;
  }
  let turns = data.messages || [];
  let token = data.next_token;
  while (token && turns.length < 2000) {
    const page = await deskApi("GET", `${path}?limit=100&next_token=${encodeURIComponent(token)}`);
    turns = turns.concat(page.messages || []);
    token = page.next_token;
  }
  if (!opening && (!desk.current || desk.current.session_id !== sessionId)) return; // another one meanwhile
  desk.current = data.session;
  desk.turns = [...new Map(turns.map((t) => [t.turn, t])).values()].sort((a, b) => a.turn - b.turn);
  renderDeskSession();
}

function renderDeskSession() {
  const session = desk.current;
  const withPerson = handedOff(session);
  $("agent-welcome").hidden = Boolean(session) || desk.denied;
  $("hand-back").hidden = !withPerson;
  $("agent-reply").disabled = !withPerson;
  $("agent-send").disabled = !withPerson;
  const stateBadge = $("agent-session-state");
  if (!session) {
    $("agent-session-name").textContent = desk.denied ? "Agents only" : "No session selected";
    stateBadge.hidden = true;
    $("agent-session-meta").textContent = "";
    $("agent-reply").placeholder = "Open a session from the queue to reply.";
  } else {
    $("agent-session-name").textContent = session.name;
    const badge = handoffBadge(session);
    stateBadge.hidden = false;
    stateBadge.className = badge.className;
    stateBadge.textContent = badge.textContent;
    const negative = desk.turns.filter((t) => t.sentiment && t.sentiment.label === SCHEMA.SentimentLabel.NEGATIVE).length;
    const said = desk.turns.filter((t) => t.input).length;
    const parts = [
      session.user_id ? `user ${session.user_id}` : null,
      session.handoff_reason ? (REASON_TEXT[session.handoff_reason] || session.handoff_reason) : null,
      session.handoff_note ? `“${session.handoff_note}”` : null, // the user's note (not in events)
      session.handoff_at ? `since ${formatDate(session.handoff_at)}` : null,
      `${plural(said, "message")} from the user, ${negative} negative`,
    ];
    $("agent-session-meta").textContent = parts.filter(Boolean).join(" · ");
    $("agent-reply").placeholder = withPerson
      ? "Reply to the user… (Enter sends, Shift+Enter for a new line)"
      : "Handed back: the bot answers this session again.";
  }
  const drawn = JSON.stringify([session && session.session_id, desk.turns]);
  if (drawn === desk.drawn) return;
  desk.drawn = drawn;
  $("agent-messages").replaceChildren(...desk.turns.map(renderDeskTurn));
  const box = $("agent-conversation");
  box.scrollTop = box.scrollHeight;
}

// A turn as the agent reads it: what the user said (with its sentiment), and who answered.
function renderDeskTurn(turn) {
  const item = el("li", { class: "turn", dataset: { turn: String(turn.turn) } });
  if (turn.input) item.append(userBubble(turn));
  if (turn.origin === ORIGIN.AGENT) {
    item.classList.add("agent-turn");
    item.append(agentBubble(turn));
  } else if (turn.answered_by) {
    item.append(el("p", { class: "stacked-note muted small",
      text: `Answered by the bot together with #${turn.answered_by}` }));
  } else if (turn.for_agent && !turn.response) {
    item.append(el("p", { class: "for-agent-note muted small", text: "For a person: no bot answer" }));
  } else if (turn.response || turn.pending) {
    const reply = el("div", { class: `bubble assistant intent-${turn.intent || INTENT.CHAT}` },
      el("span", { class: "role-label bot", text: "Bot" }));
    if (turn.intent && INTENT_BADGE[turn.intent]) {
      reply.append(el("span", { class: `intent-badge intent-${turn.intent}`, text: INTENT_BADGE[turn.intent] }));
    }
    reply.append(turn.pending
      ? el("p", { class: "text error-text", text: "The model did not answer." })
      : el("p", { class: "text", text: turn.response }));
    const recalled = (turn.sources || []).filter((x) => x.kind !== SOURCE.PROFILE);
    const profile = (turn.sources || []).length - recalled.length;
    if (recalled.length) {
      reply.append(el("p", { class: "muted small",
        text: `${SOURCES_LABEL[turn.intent] || "Memories used"}: ${recalled.map((x) => x.title || x.id).join("; ")}` }));
    }
    if (profile) {
      reply.append(el("p", { class: "muted small", text: `From the user's profile: ${plural(profile, "fact")}` }));
    }
    if (turn.feedback) {
      reply.append(el("p", { class: "muted small", text: `Rated ${turn.feedback.rating === SCHEMA.Rating.UP ? "good" : "bad"} by the user` }));
    }
    item.append(reply);
  }
  return item;
}

async function sendDeskReply(event) {
  if (event) event.preventDefault();
  const session = desk.current;
  const box = $("agent-reply");
  const content = box.value.trim();
  if (!session || !content) return;
  // The same text again after a failure: the same id, so the API stores it once.
  if (!desk.reply || desk.reply.content !== content) {
    desk.reply = { content, client_message_id: newMessageId() };
  }
  $("agent-send").disabled = true;
  try {
    const path = `/agent/sessions/${idSegment(session.session_id)}/messages`;
    const data = await deskApi("POST", path, desk.reply);
    desk.reply = null;
    box.value = "";
    if (data && data.turn) {
      desk.turns = desk.turns.filter((t) => t.turn !== data.turn.turn).concat([data.turn]);
    }
    await loadDeskSession(session.session_id); // it is answered by this agent now
    await refreshQueue();
  } catch (error) {
    if (!deskRefused(error)) showError(error);
  } finally {
    renderDeskSession();
  }
}

async function handBack() {
  const session = desk.current;
  if (!session) return;
  const path = `/agent/sessions/${idSegment(session.session_id)}/handback`;
  let data;
  try {
    data = await deskApi("POST", path);
  } catch (error) {
    if (deskRefused(error)) return;
    throw error;
  }
  if (data && data.session) desk.current = data.session;
  else await loadDeskSession(session.session_id);
  renderDeskSession();
  notify(`Handed back: the bot answers "${session.name}" again.`);
  await refreshQueue().catch(showError);
}

// --- settings ---------------------------------------------------------------------------------

function openSettings() {
  $("api-base").value = localStorage.getItem(STORE.base) || "";
  $("api-token").value = localStorage.getItem(STORE.token) || "";
  $("api-user").value = localStorage.getItem(STORE.user) || "";
  $("api-agent").value = localStorage.getItem(STORE.agentUser) || "";
  $("settings").showModal();
}

function saveSettings() {
  const pairs = [[STORE.base, $("api-base").value], [STORE.token, $("api-token").value],
    [STORE.user, $("api-user").value], [STORE.agentUser, $("api-agent").value]];
  for (const [key, value] of pairs) {
    if (value.trim()) localStorage.setItem(key, value.trim());
    else localStorage.removeItem(key);
  }
  state.current = null;
  state.turns = [];
  state.records = [];
  state.recordsLoaded = false;
  state.editing = null;
  desk.current = null;
  desk.turns = [];
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
  localStorage.removeItem(sessionKey());
  localStorage.removeItem(outboxKey()); // its sessions are gone: nothing could take them
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
  if (state.view === "agent") return startDesk();
  describeConnection();
  renderHeader();
  renderTurns();
  renderProfile();
  loadProfile(); // its errors show in the panel
  try {
    await loadSessions();
    await reopenConversation();
  } finally {
    flushOutboxes(); // what a lost connection or a closed page left unsent
  }
}

// The conversation the page was in (remembered per user), else the newest open one.
async function reopenConversation() {
  const remembered = localStorage.getItem(sessionKey());
  const known = state.sessions.find((s) => s.session_id === remembered);
  if (remembered && !known) {
    try {
      await selectSession(remembered); // older than the first page of the list
      return;
    } catch (error) {
      if (error.status !== 404) throw error;
      localStorage.removeItem(sessionKey());
    }
  }
  const pick = known || state.sessions.find((s) => s.status === STATUS.OPEN);
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
  $("message").addEventListener("input", () => {
    if (!$("composer-hint").hidden && !commandHint($("message").value.trim())) showComposerHint(null);
  });
  $("message").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      guard(submitMessage)();
    }
  });
  $("memory-search").addEventListener("submit", guard(searchMemories));
  $("close-memories").addEventListener("click", () => { $("memory-results").hidden = true; });
  fillRecordTypes();
  $("record-add").addEventListener("submit", guard(addRecord));
  $("record-text").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("record-add").requestSubmit();
    }
  });
  $("refresh-profile").addEventListener("click", () => loadProfile({ announce: "Up to date." }));
  $("open-settings").addEventListener("click", openSettings);
  // Enter in a field submits with Save (the form's only submit button); Cancel just closes.
  $("cancel-settings").addEventListener("click", () => $("settings").close("cancel"));
  $("settings").addEventListener("close", () => {
    if ($("settings").returnValue === "save") saveSettings();
  });
  $("forget-all").addEventListener("click", guard(forgetEverything));
  $("toast-close").addEventListener("click", () => { $("toast").hidden = true; });
  window.addEventListener("online", () => {
    if (state.view === "chat") flushOutboxes({ now: true });
  });
  $("talk-to-person").addEventListener("click", guard(talkToPerson));
  // Nothing is polled while the page is hidden; back in view, polling resumes.
  document.addEventListener("visibilitychange", () => {
    syncHandoffPolling();
    syncDeskPolling();
  });
  $("refresh-queue").addEventListener("click", guard(deskTick));
  $("agent-composer").addEventListener("submit", guard(sendDeskReply));
  $("agent-reply").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      guard(sendDeskReply)();
    }
  });
  $("hand-back").addEventListener("click", guard(handBack));
  const view = state.view === "agent" ? $("view-agent") : $("view-chat");
  view.setAttribute("aria-current", "page");
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
