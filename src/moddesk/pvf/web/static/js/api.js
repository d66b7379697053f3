// The only way the page talks to the server: POST /api/ops/<name> and the /api/events stream.
// The person's session rides in the HttpOnly cookie the login link set; every call also sends
// the page's CSRF token (kept per port by /_moddesk/person.js, loaded before this module).
export function headers(extra = {}) {
  const csrf = typeof window.moddeskCsrf === "function" ? window.moddeskCsrf() : "";
  return { "content-type": "application/json", "x-moddesk-csrf": csrf, ...extra };
}

export class OpError extends Error {
  constructor(payload) {
    super(payload.message || payload.error || "error");
    this.code = payload.error || "ERROR";
    this.payload = payload;
  }
}

export async function op(name, body = {}) {
  const response = await fetch(`/api/ops/${name}`, { method: "POST", headers: headers(), body: JSON.stringify(body) });
  let data;
  try { data = await response.json(); } catch { throw new OpError({ error: "HTTP_" + response.status, message: response.statusText }); }
  if (data && data.ok === false) throw new OpError(data);
  return data;
}

export async function windowCall(path, body, method = "POST") {
  const response = await fetch(`/api/windows/${path}`, { method, headers: headers(), body: body ? JSON.stringify(body) : undefined });
  return response.json();
}

// Server-sent events read through fetch (EventSource cannot send the CSRF header).
export function subscribe(windowId, onEvent, onState) {
  let stopped = false;
  async function run() {
    while (!stopped) {
      try {
        const response = await fetch(`/api/events?window=${encodeURIComponent(windowId)}`, { headers: headers() });
        if (response.status === 401 || response.status === 403) {
          // logged out (a restarted service, a cleared browser): retrying cannot help, a new link can
          stopped = true;
          onEvent("denied", await response.json().catch(() => ({ error: "HTTP_" + response.status })));
          break;
        }
        onState(true);
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value;
          let cut;
          while ((cut = buffer.indexOf("\n\n")) >= 0) {
            const block = buffer.slice(0, cut);
            buffer = buffer.slice(cut + 2);
            let event = "message", data = "";
            for (const line of block.split("\n")) {
              if (line.startsWith("event: ")) event = line.slice(7);
              else if (line.startsWith("data: ")) data += line.slice(6);
            }
            if (data) onEvent(event, JSON.parse(data));
          }
        }
      } catch (err) { /* reconnect below */ }
      onState(false);
      if (!stopped) await new Promise((r) => setTimeout(r, 1000));
    }
  }
  run();
  return () => { stopped = true; };
}
