// api.js: every call the console makes goes through here, to this kurad's
// own API with the token the person gave (sessionStorage, this tab only).

const TOKEN_KEY = "kura.token";

export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
    this.details = details || {};
  }
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY) || "";
}

export function setToken(t) {
  if (t) sessionStorage.setItem(TOKEN_KEY, t);
  else sessionStorage.removeItem(TOKEN_KEY);
}

// askToken is set by app.js: it shows the token dialog and resolves to true
// when a token was entered.
let askToken = async () => false;
export function onTokenNeeded(fn) {
  askToken = fn;
}

function url(path, query) {
  const u = new URL(path, location.origin);
  if (query) {
    for (const [k, v] of Object.entries(query)) {
      if (v === undefined || v === null || v === "") continue;
      if (Array.isArray(v)) v.forEach((x) => u.searchParams.append(k, x));
      else u.searchParams.set(k, String(v));
    }
  }
  return u.pathname + u.search;
}

function headers(extra) {
  const h = { Accept: "application/json", ...extra };
  const t = token();
  if (t) h.Authorization = "Bearer " + t;
  return h;
}

// request sends one call. A 401 asks for a token once and repeats the call
// with it; every other error becomes an ApiError with the API's code.
export async function request(method, path, { query, body, signal, raw } = {}) {
  for (let attempt = 0; ; attempt++) {
    // Every write says JSON, with a body or without: kurad refuses any
    // other type, which a page of another site could send it unasked.
    const json = body !== undefined || (method !== "GET" && method !== "HEAD");
    const init = { method, headers: headers(json ? { "Content-Type": "application/json" } : {}), signal };
    if (body !== undefined) init.body = JSON.stringify(body);
    let resp;
    try {
      resp = await fetch(url(path, query), init);
    } catch (e) {
      if (e.name === "AbortError") throw e;
      throw new ApiError(0, "unreachable", "kurad did not answer: " + e.message);
    }
    if (resp.status === 401 && attempt === 0 && (await askToken(token() ? "The token was refused." : "This kurad asks for a token."))) {
      continue;
    }
    if (raw && resp.ok) return resp;
    const text = await resp.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = null;
    }
    if (!resp.ok) {
      const e = (data && data.error) || {};
      throw new ApiError(resp.status, e.code || "http_" + resp.status, e.message || resp.statusText || "request failed", e.details);
    }
    return data === null ? text : data;
  }
}

export const get = (path, query, opts) => request("GET", path, { ...opts, query });
export const post = (path, body, opts) => request("POST", path, { ...opts, body });

// enc encodes one path segment.
export const enc = encodeURIComponent;

// all follows next_cursor to the end of a list and returns the items under
// key, concatenated. max bounds the pages so a huge list cannot hang the tab.
export async function all(path, key, query, opts, max = 100) {
  const out = [];
  let cursor = "";
  for (let i = 0; i < max; i++) {
    const page = await get(path, { ...query, cursor }, opts);
    out.push(...((page && page[key]) || []));
    cursor = page && page.next_cursor;
    if (!cursor) return out;
  }
  return out;
}
