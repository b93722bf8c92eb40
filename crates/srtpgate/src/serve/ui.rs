//! The management page (docs/MANAGEMENT.md): its files (embedded), login
//! and sessions, the WebSocket, and the sampler that feeds every connected
//! page from one look at the call table per interval.
//!
//! Access: a session cookie set by `POST /ui/login` (token or user and
//! password), or `Authorization: Bearer <token>`; read-only without either
//! when `read_only_open` is set. Cross-site requests are refused by the
//! `Origin` check on the socket and the posts, and by `SameSite=Strict`.

use super::config::UiConfig;
use super::Shared;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use serde::Deserialize;
use serde_json::{json, Value};
use srtpgate_ui::{Action, Coalescer, Media, View};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;

/// How often the call table is sampled for the pages.
pub const INTERVAL: Duration = Duration::from_millis(500);
/// A client sending more messages than this a second is disconnected.
const MAX_MESSAGES_PER_SECOND: u32 = 20;
/// Logins checked at once.
const MAX_LOGINS: usize = 2;
/// A refused login is answered after this long (a guesser's pace).
const REFUSED_LOGIN_DELAY: Duration = Duration::from_millis(500);
/// A page that does not take a message within this long is disconnected.
const SEND_TIMEOUT: Duration = Duration::from_secs(10);
/// The session cookie.
const COOKIE: &str = "srtpgate_session";

const INDEX: &[u8] = include_bytes!("../../../../ui/dist/index.html");
const LOGIN: &[u8] = include_bytes!("../../../../ui/dist/login.html");
const APP_JS: &[u8] = include_bytes!("../../../../ui/dist/app.js");
const APP_CSS: &[u8] = include_bytes!("../../../../ui/dist/app.css");

/// Sets the log filter (the tracing subscriber's reload handle).
pub type LogControl = Box<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

/// What a request may do.
#[derive(Clone, Debug, PartialEq)]
enum Access {
    /// Watch and act, as this user.
    Write(String),
    /// Watch only (open read-only access).
    Read,
}

struct Session {
    user: String,
    expires: Instant,
}

/// One look at the relay, shared by every page.
pub struct Sample {
    rows: Vec<srtpgate_ui::CallRow>,
    summary: Value,
    engine: Value,
}

/// The page's state in the daemon.
pub struct Ui {
    cfg: UiConfig,
    sessions: Mutex<HashMap<String, Session>>,
    /// Pages connected now.
    pub clients: AtomicUsize,
    /// Logins refused.
    pub login_failures: AtomicU64,
    /// Client messages refused (not JSON, unknown, too large, not allowed).
    pub messages_refused: AtomicU64,
    /// Actions done (calls ended, directions, media actions, log level,
    /// drain).
    pub actions: AtomicU64,
    sample: tokio::sync::watch::Sender<Arc<Sample>>,
    /// Password checks at once (each Argon2 check takes ~19 MiB and tens of
    /// ms of a core): more logins wait for none and get 429.
    logins: tokio::sync::Semaphore,
    log: Option<LogControl>,
    log_level: Mutex<String>,
}

impl Ui {
    /// The page's state for `cfg`; `log` changes the log filter.
    pub fn new(cfg: UiConfig, log: Option<LogControl>, log_level: &str) -> Ui {
        let empty = Arc::new(Sample { rows: Vec::new(), summary: json!({}), engine: json!({}) });
        Ui {
            cfg,
            sessions: Mutex::new(HashMap::new()),
            clients: AtomicUsize::new(0),
            login_failures: AtomicU64::new(0),
            messages_refused: AtomicU64::new(0),
            actions: AtomicU64::new(0),
            sample: tokio::sync::watch::channel(empty).0,
            logins: tokio::sync::Semaphore::new(MAX_LOGINS),
            log,
            log_level: Mutex::new(log_level.to_string()),
        }
    }

    /// Whether the request carries the right bearer token.
    fn token_ok(&self, headers: &HeaderMap) -> bool {
        match (&self.cfg.token_sha256, bearer(headers)) {
            (Some(want), Some(token)) => sha256(token.as_bytes()).ct_eq(want).into(),
            _ => false,
        }
    }

    fn access(&self, headers: &HeaderMap) -> Option<Access> {
        if self.token_ok(headers) {
            return Some(Access::Write("token".into()));
        }
        if let Some(id) = cookie(headers, COOKIE) {
            let mut s = self.sessions.lock().ok()?;
            let now = Instant::now();
            s.retain(|_, v| v.expires > now);
            // Session ids are looked up by hash: a timing difference tells
            // nothing about the id.
            if let Some(v) = s.get(&hex::encode(sha256(id.as_bytes()))) {
                return Some(Access::Write(v.user.clone()));
            }
        }
        self.cfg.read_only_open.then_some(Access::Read)
    }

    /// Checks a login; the user name on success.
    fn check(&self, form: &LoginForm) -> Option<String> {
        if let (Some(want), Some(token)) = (&self.cfg.token_sha256, form.token.as_deref().filter(|t| !t.is_empty())) {
            return bool::from(sha256(token.as_bytes()).ct_eq(want)).then(|| "token".to_string());
        }
        let (user, hash) = self.cfg.user.as_ref()?;
        let (u, p) = (form.user.as_deref()?, form.password.as_deref()?);
        use argon2::PasswordVerifier;
        let parsed = argon2::PasswordHash::new(hash).ok()?;
        let ok = argon2::Argon2::default().verify_password(p.as_bytes(), &parsed).is_ok();
        // The name compared after the hash, so that an unknown user costs
        // the same time as a wrong password.
        (ok && bool::from(u.as_bytes().ct_eq(user.as_bytes()))).then(|| user.clone())
    }

    fn open_session(&self, user: String) -> Option<String> {
        let mut id = [0u8; 32];
        aws_lc_rs::rand::fill(&mut id).ok()?;
        let id = hex::encode(id);
        self.sessions
            .lock()
            .ok()?
            .insert(hex::encode(sha256(id.as_bytes())), Session { user, expires: Instant::now() + self.cfg.session });
        Some(id)
    }

    /// Whether the session behind `access` still holds (a token or open
    /// read-only access always does).
    fn still(&self, session: Option<&str>) -> bool {
        let Some(key) = session else { return true };
        let now = Instant::now();
        self.sessions.lock().map(|s| s.get(key).is_some_and(|v| v.expires > now)).unwrap_or(false)
    }
}

fn sha256(b: &[u8]) -> [u8; 32] {
    let d = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, b);
    let mut out = [0u8; 32];
    out.copy_from_slice(d.as_ref());
    out
}

fn bearer(h: &HeaderMap) -> Option<&str> {
    h.get(header::AUTHORIZATION)?.to_str().ok()?.strip_prefix("Bearer ").map(str::trim)
}

fn cookie<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|kv| kv.trim().strip_prefix(name)?.strip_prefix('='))
}

/// No `Origin`, or the origin the request was sent to (its `Host`).
fn same_origin(h: &HeaderMap) -> bool {
    let Some(origin) = h.get(header::ORIGIN) else { return true };
    let (Ok(origin), Some(Ok(host))) = (origin.to_str(), h.get(header::HOST).map(|v| v.to_str())) else {
        return false;
    };
    let rest = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://"));
    rest == Some(host)
}

/// The routes under `/ui`.
pub fn routes() -> Router<Arc<Shared>> {
    Router::new()
        .route("/ui", get(|| async { redirect("/ui/") }))
        .route("/ui/", get(index))
        .route("/ui/login", get(|| async { page(StatusCode::OK, LOGIN) }).post(login))
        .route("/ui/logout", post(logout))
        .route("/ui/ws", get(socket))
        .route("/ui/assets/app.js", get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }))
        .route("/ui/assets/app.css", get(|| async { asset("text/css; charset=utf-8", APP_CSS) }))
}

fn redirect(to: &'static str) -> Response {
    (StatusCode::SEE_OTHER, [(header::LOCATION, to)]).into_response()
}

fn page(status: StatusCode, body: &'static [u8]) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (header::X_FRAME_OPTIONS, "DENY"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
            ),
        ],
        body,
    )
        .into_response()
}

fn asset(kind: &'static str, body: &'static [u8]) -> Response {
    ([(header::CONTENT_TYPE, kind), (header::CACHE_CONTROL, "no-cache")], body).into_response()
}

fn ui(s: &Shared) -> &Ui {
    s.ui.as_ref().expect("the /ui routes exist only with the page configured")
}

async fn index(State(s): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    match ui(&s).access(&headers) {
        Some(_) => page(StatusCode::OK, INDEX),
        // The login form, with the status that says the request was refused.
        None => page(StatusCode::UNAUTHORIZED, LOGIN),
    }
}

#[derive(Deserialize, Default)]
struct LoginForm {
    token: Option<String>,
    user: Option<String>,
    password: Option<String>,
}

async fn login(State(s): State<Arc<Shared>>, headers: HeaderMap, Form(form): Form<LoginForm>) -> Response {
    if !same_origin(&headers) {
        return (StatusCode::FORBIDDEN, "cross-site request refused\n").into_response();
    }
    let Ok(_permit) = ui(&s).logins.try_acquire() else {
        return (StatusCode::TOO_MANY_REQUESTS, "too many logins at once; try again\n").into_response();
    };
    let shared = s.clone();
    // Argon2 takes tens of ms: off the control runtime's threads.
    let user = tokio::task::spawn_blocking(move || ui(&shared).check(&form)).await.ok().flatten();
    let u = ui(&s);
    let Some(user) = user else {
        u.login_failures.fetch_add(1, Relaxed);
        tracing::warn!("management page: login refused");
        tokio::time::sleep(REFUSED_LOGIN_DELAY).await;
        return page(StatusCode::UNAUTHORIZED, LOGIN);
    };
    tracing::info!(user, "management page: login");
    let Some(id) = u.open_session(user) else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "no random bytes for a session\n").into_response();
    };
    let c = format!("{COOKIE}={id}; Path=/ui; HttpOnly; SameSite=Strict; Max-Age={}", u.cfg.session.as_secs());
    let mut r = redirect("/ui/");
    if let Ok(v) = HeaderValue::from_str(&c) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

async fn logout(State(s): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    if !same_origin(&headers) {
        return (StatusCode::FORBIDDEN, "cross-site request refused\n").into_response();
    }
    if let (Some(id), Ok(mut sessions)) = (cookie(&headers, COOKIE), ui(&s).sessions.lock()) {
        sessions.remove(&hex::encode(sha256(id.as_bytes())));
    }
    let mut r = redirect("/ui/login");
    r.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("srtpgate_session=; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=0"),
    );
    r
}

async fn socket(State(s): State<Arc<Shared>>, headers: HeaderMap, ws: WebSocketUpgrade) -> Response {
    let u = ui(&s);
    if !same_origin(&headers) {
        return (StatusCode::FORBIDDEN, "cross-site request refused\n").into_response();
    }
    let Some(access) = u.access(&headers) else {
        return (StatusCode::UNAUTHORIZED, "a credential is needed\n").into_response();
    };
    // The slot is taken before the upgrade (and given back if it fails).
    if u.clients.fetch_update(Relaxed, Relaxed, |n| (n < u.cfg.max_clients).then_some(n + 1)).is_err() {
        return (StatusCode::SERVICE_UNAVAILABLE, "too many pages connected\n").into_response();
    }
    let slot = ClientGuard(s.clone());
    // A page let in by its session is let go when the session ends.
    let session = match access {
        Access::Write(_) if !u.token_ok(&headers) => {
            cookie(&headers, COOKIE).map(|id| hex::encode(sha256(id.as_bytes())))
        }
        _ => None,
    };
    // Messages up to 16 times the largest taken are read and refused with
    // an `error` (the page stays connected); beyond that the socket closes.
    ws.max_message_size(16 * srtpgate_ui::MAX_MESSAGE)
        .max_frame_size(16 * srtpgate_ui::MAX_MESSAGE)
        .on_upgrade(move |socket| client(s, socket, access, session, slot))
}

/// A page's slot among `max_clients`, given back when dropped.
struct ClientGuard(Arc<Shared>);

impl Drop for ClientGuard {
    fn drop(&mut self) {
        if let Some(u) = &self.0.ui {
            u.clients.fetch_sub(1, Relaxed);
        }
    }
}

/// One connected page.
struct Client {
    view: View,
    rows: Coalescer,
    detail: Option<String>,
}

async fn client(s: Arc<Shared>, mut socket: WebSocket, access: Access, session: Option<String>, _slot: ClientGuard) {
    let u = ui(&s);
    let (user, read_only) = match &access {
        Access::Write(u) => (u.as_str(), false),
        Access::Read => ("", true),
    };
    let (workers, transcode_workers, pairs, draining) = match s.control.lock() {
        Ok(c) => {
            let w = super::ui_view::workers(&c);
            (w.len(), w.iter().filter(|w| w.2).count(), c.plane.ports().1, c.table.draining())
        }
        Err(_) => return,
    };
    let inform = json!({
        "type": "inform", "version": env!("CARGO_PKG_VERSION"), "engine": s.engine, "io": s.io,
        "workers": workers, "transcode_workers": transcode_workers, "read_only": read_only, "user": user,
        "interval_ms": INTERVAL.as_millis() as u64,
        "limits": {"port_pairs": pairs, "max_clients": u.cfg.max_clients},
        "log_level": u.log_level.lock().map(|l| l.clone()).unwrap_or_default(), "draining": draining,
    });
    if send(&mut socket, inform.to_string()).await.is_err() {
        return;
    }
    let mut samples = u.sample.subscribe();
    let mut c = Client { view: View::default(), rows: Coalescer::default(), detail: None };
    let (mut second, mut in_second) = (Instant::now(), 0u32);
    loop {
        let out = tokio::select! {
            changed = samples.changed() => {
                // A session that ended (logout, expiry) ends its pages.
                if changed.is_err() || !u.still(session.as_deref()) {
                    break;
                }
                let sample = samples.borrow_and_update().clone();
                render(&s, &mut c, &sample)
            }
            m = socket.recv() => {
                if second.elapsed() >= Duration::from_secs(1) {
                    (second, in_second) = (Instant::now(), 0);
                }
                in_second += 1;
                if in_second > MAX_MESSAGES_PER_SECOND {
                    u.messages_refused.fetch_add(1, Relaxed);
                    tracing::warn!("management page: a client sent over {MAX_MESSAGES_PER_SECOND} messages a second; closed");
                    break;
                }
                let text = match m {
                    Some(Ok(Message::Text(t))) => t,
                    Some(Ok(Message::Binary(_))) => {
                        u.messages_refused.fetch_add(1, Relaxed);
                        let e = srtpgate_ui::error(None, "binary messages are not taken");
                        if send(&mut socket, e).await.is_err() {
                            return;
                        }
                        continue;
                    }
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                    Some(Ok(Message::Close(_))) | Some(Err(_)) | None => break,
                };
                let access = if u.still(session.as_deref()) { access.clone() } else { Access::Read };
                let mut out = vec![handle(&s, &mut c, &access, text.as_bytes())];
                // A new view or detail is answered at once from the last sample.
                if !out[0].contains("\"type\":\"error\"") {
                    let sample = samples.borrow().clone();
                    out.extend(render(&s, &mut c, &sample));
                }
                out
            }
        };
        for m in out {
            if send(&mut socket, m).await.is_err() {
                return;
            }
        }
    }
}

/// Sends one message; a page that does not take it within
/// [`SEND_TIMEOUT`] is given up.
async fn send(socket: &mut WebSocket, m: String) -> Result<(), ()> {
    match tokio::time::timeout(SEND_TIMEOUT, socket.send(Message::Text(m.into()))).await {
        Ok(Ok(())) => Ok(()),
        _ => Err(()),
    }
}

/// The messages that bring one page up to `sample`.
fn render(s: &Shared, c: &mut Client, sample: &Sample) -> Vec<String> {
    if sample.summary.get("time_ms").is_none() {
        return Vec::new();
    }
    let (page, matching) = c.view.page(&sample.rows);
    let mut out = c.rows.diff(page.iter().map(|&i| &sample.rows[i]));
    let mut summary = sample.summary.clone();
    if let (Some(m), Ok(v)) = (summary.as_object_mut(), serde_json::to_value(&c.view)) {
        m.insert("matching".into(), json!(matching));
        if let Some(v) = v.as_object() {
            m.extend(v.clone());
        }
    }
    out.push(srtpgate_ui::update("summary", None, summary));
    out.push(srtpgate_ui::update("engine", None, sample.engine.clone()));
    if let Some(id) = &c.detail {
        let d = s.control.lock().ok().and_then(|c| super::ui_view::detail(&c.table, id));
        match d {
            Some(d) => out.push(srtpgate_ui::update("detail", Some(id), d)),
            None => {
                out.push(srtpgate_ui::remove("detail", id));
                c.detail = None;
            }
        }
    }
    out
}

/// Does what one client message asks; the answer (`inform` or `error`).
fn handle(s: &Shared, c: &mut Client, access: &Access, text: &[u8]) -> String {
    let u = ui(s);
    let req = match srtpgate_ui::parse(text) {
        Ok(r) => r,
        Err(e) => {
            u.messages_refused.fetch_add(1, Relaxed);
            return srtpgate_ui::error(e.reference, &e.message);
        }
    };
    let r = req.reference;
    let user = match (access, req.action.writes()) {
        (Access::Write(user), _) => user.as_str(),
        (Access::Read, false) => "",
        (Access::Read, true) => {
            u.messages_refused.fetch_add(1, Relaxed);
            return srtpgate_ui::error(r, "read-only: this page has no write access");
        }
    };
    let result: Result<String, String> = match req.action {
        Action::View(v) => {
            c.view = v;
            Ok("view set".into())
        }
        Action::Detail(id) => {
            c.detail = id;
            Ok("detail set".into())
        }
        Action::EndCall(id) => {
            s.control.lock().map_err(|_| "call table unavailable".to_string()).and_then(|mut control| {
                control.end_call(&id)?;
                tracing::info!(call_id = id, user, "call ended from the management page");
                Ok(format!("call '{id}' ended"))
            })
        }
        Action::Record { id, what } => {
            s.control.lock().map_err(|_| "call table unavailable".to_string()).and_then(|mut control| {
                use srtpgate_calls::recording::Operator;
                let op = match what {
                    srtpgate_ui::Recording::Start => Operator::Start,
                    srtpgate_ui::Recording::Pause => Operator::Pause,
                    srtpgate_ui::Recording::Stop => Operator::Stop,
                };
                let done = control.record(&id, op)?;
                tracing::info!(call_id = id, user, "{done} (from the management page)");
                Ok(done)
            })
        }
        Action::LegDirection { id, tag, direction } => {
            s.control.lock().map_err(|_| "call table unavailable".to_string()).and_then(|mut control| {
                let (muted, held) = direction.blocks();
                control.table.set_direction(&id, &tag, muted, held)?;
                tracing::info!(
                    call_id = id,
                    tag,
                    user,
                    "leg direction set to {} from the management page",
                    direction.name()
                );
                Ok(format!("leg '{tag}' of call '{id}' set to {}", direction.name()))
            })
        }
        Action::LegMedia { id, tag, media, code, file } => {
            let what = match (media, &code, &file) {
                (Media::PlayDtmf, Some(c), _) => format!("{} {c}", media.command()),
                (Media::PlayMedia, _, Some(f)) => format!("{} '{f}'", media.command()),
                _ => media.command().to_string(),
            };
            leg_media(s, &id, &tag, media, code, file).map(|note| {
                tracing::info!(call_id = id, tag, user, "{what} from the management page");
                format!("leg '{tag}' of call '{id}': {what}{note}")
            })
        }
        Action::LogLevel(level) => match &u.log {
            None => Err("the log level cannot be changed in this process".into()),
            Some(set) => set(&level).map(|()| {
                if let Ok(mut l) = u.log_level.lock() {
                    *l = level.clone();
                }
                tracing::info!(user, "log level set to {level} from the management page");
                format!("log level set to {level}")
            }),
        },
        Action::Drain(on) => s.control.lock().map_err(|_| "call table unavailable".to_string()).map(|mut control| {
            control.table.set_draining(on);
            tracing::info!(
                user,
                "{} from the management page",
                if on { "draining (no new calls)" } else { "taking new calls again" }
            );
            (if on { "draining: new calls are refused" } else { "taking new calls" }).to_string()
        }),
    };
    match result {
        Ok(m) => {
            if !matches!(m.as_str(), "view set" | "detail set") {
                u.actions.fetch_add(1, Relaxed);
            }
            srtpgate_ui::done(r, &m)
        }
        Err(e) => {
            u.messages_refused.fetch_add(1, Relaxed);
            srtpgate_ui::error(r, &e)
        }
    }
}

/// The NG request of a media action on leg `tag` of call `id`: the
/// command with the leg's tag as its `from-tag`, and the digit or file.
fn media_request(id: &str, tag: &str, media: Media, code: Option<String>, file: Option<String>) -> srtpgate_ng::Value {
    let mut v = srtpgate_ng::Value::dict().with("command", media.command()).with("call-id", id).with("from-tag", tag);
    if let Some(c) = code {
        v.insert("code", c);
    }
    if let Some(f) = file {
        v.insert("file", f);
    }
    v
}

/// Carries out a media action as the NG command it stands for: the
/// request is built and parsed as NG's, and run as one from the NG socket
/// ([`Control::handle`], which also hands what the table queued to the
/// workers), so that it does exactly what the command does. An error
/// reply is the error; else what is worth adding to the page's message
/// (the prompt's length, the reply's warning).
///
/// [`Control::handle`]: super::control::Control::handle
fn leg_media(
    s: &Shared,
    id: &str,
    tag: &str,
    media: Media,
    code: Option<String>,
    file: Option<String>,
) -> Result<String, String> {
    let bytes = media_request(id, tag, media, code, file).to_bytes();
    let req = srtpgate_ng::parse_request(&bytes).map_err(|e| format!("{}: {e}", media.command()))?;
    let reply = s.control.lock().map_err(|_| "call table unavailable".to_string())?.handle(&req);
    let text = |key: &str| reply.get(key).and_then(srtpgate_ng::Value::as_str).map(str::to_owned);
    if text("result").as_deref() == Some("error") {
        let reason = text("error-reason").unwrap_or_else(|| "refused".into());
        return Err(format!("{} on leg '{tag}' of call '{id}': {reason}", media.command()));
    }
    let mut note = String::new();
    if let Some(ms) = reply.get("duration").and_then(srtpgate_ng::Value::as_int) {
        note.push_str(&format!(" ({ms} ms)"));
    }
    if let Some(w) = text("warning") {
        note.push_str(&format!("; warning: {w}"));
    }
    Ok(note)
}

/// Samples the relay for the pages once per [`INTERVAL`], while any is
/// connected: the rows of every call, the summary and the engine.
pub async fn sampler(s: Arc<Shared>) {
    let mut tick = tokio::time::interval(INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut last: Option<(Instant, u64, u64, Vec<u64>)> = None;
    loop {
        tick.tick().await;
        let u = ui(&s);
        if u.clients.load(Relaxed) == 0 {
            // No page: nothing kept that a new page could be shown stale.
            if last.take().is_some() {
                u.sample.send_replace(Arc::new(Sample { rows: Vec::new(), summary: json!({}), engine: json!({}) }));
            }
            continue;
        }
        let Ok(control) = s.control.lock() else { continue };
        let rows = super::ui_view::rows(&control.table);
        let (media, hist) = control.plane.media_totals();
        let workers = super::ui_view::workers(&control);
        let draining = control.table.draining();
        let load_limited: u64 = control.table.totals.load_limited.values().sum();
        let engine_stats = control.plane.engine_stats();
        drop(control);
        let stats: Vec<_> = workers.iter().map(|w| w.0.clone()).collect();
        let now = Instant::now();
        // Rate and delay over the last interval.
        let stale = media.drops[crate::relay::stats::Drop::Stale as usize];
        let (rate, stale_rate, recent) = match &last {
            Some((t, p, st, b)) => {
                let dt = now.duration_since(*t).as_secs_f64().max(1e-3);
                let d: Vec<u64> = hist.buckets.iter().zip(b).map(|(x, y)| x.saturating_sub(*y)).collect();
                (
                    media.packets_in.saturating_sub(*p) as f64 / dt,
                    stale.saturating_sub(*st) as f64 / dt,
                    crate::relay::stats::Histogram { buckets: d },
                )
            }
            None => (0.0, 0.0, crate::relay::stats::Histogram { buckets: vec![0; hist.buckets.len()] }),
        };
        last = Some((now, media.packets_in, stale, hist.buckets.clone()));
        let time_ms =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        let summary = json!({
            "time_ms": time_ms, "calls": rows.len(), "packets_per_s": rate,
            "packets_in": media.packets_in, "packets_out": media.packets_out, "dropped": media.dropped(),
            "stale": stale, "stale_per_s": stale_rate,
            "delay_p50_us": recent.quantile_or_over_us(0.5), "delay_p99_us": recent.quantile_or_over_us(0.99),
            "draining": draining, "load_limited": load_limited,
            "log_level": u.log_level.lock().map(|l| l.clone()).unwrap_or_default(),
        });
        let (batches, packets) =
            stats.iter().fold((0, 0), |(b, p), w| (b + w.batches.load(Relaxed), p + w.batch_packets.load(Relaxed)));
        let mut engine = json!({
            "name": s.engine, "batches": batches, "batch_packets": packets, "shares": [], "threshold": null,
            "round_trip": {"bounds_us": [], "counts": [], "sum_us": 0.0},
            "workers": workers.iter().enumerate().map(|(i, (w, alive, tc))| json!({
                "id": i, "legs": w.legs.load(Relaxed), "transcoding": tc, "alive": alive,
                "batches": w.batches.load(Relaxed), "batch_packets": w.batch_packets.load(Relaxed),
            })).collect::<Vec<_>>(),
        });
        if let Some(e) = engine_stats {
            engine["shares"] =
                e.shares.iter().map(|(p, b, n)| json!({"path": p, "batches": b, "packets": n})).collect();
            engine["threshold"] = json!(e.threshold);
            engine["round_trip"] = json!({
                "bounds_us": e.round_trip_us.iter().map(|(b, _)| if b.is_finite() { json!(b) } else { Value::Null }).collect::<Vec<_>>(),
                "counts": e.round_trip_us.iter().map(|(_, n)| *n).collect::<Vec<_>>(),
                "sum_us": e.round_trip_sum_us,
            });
        }
        u.sample.send_replace(Arc::new(Sample { rows, summary, engine }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(list: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in list {
            h.append(*k, HeaderValue::from_str(v).expect("header"));
        }
        h
    }

    fn ui(read_only_open: bool) -> Ui {
        use argon2::password_hash::{PasswordHasher, SaltString};
        let salt = SaltString::encode_b64(b"0123456789abcdef").expect("salt");
        let hash = argon2::Argon2::default().hash_password(b"secret", &salt).expect("hash").to_string();
        Ui::new(
            UiConfig {
                token_sha256: Some(sha256(b"tok")),
                user: Some(("ops".into(), hash)),
                read_only_open,
                session: Duration::from_secs(60),
                max_clients: 4,
            },
            None,
            "info",
        )
    }

    #[test]
    fn every_media_action_is_its_ng_command() {
        use srtpgate_ng::Command;
        for media in Media::ALL {
            let code = (media == Media::PlayDtmf).then(|| "#".to_string());
            let file = (media == Media::PlayMedia).then(|| "hold.wav".to_string());
            let req =
                srtpgate_ng::parse_request(&media_request("c1", "t", media, code, file).to_bytes()).expect("parses");
            assert_eq!(req.command.name(), media.command());
            assert!(Command::ALL.contains(&req.command));
            assert_eq!((req.call_id.as_deref(), req.from_tag.as_deref()), (Some("c1"), Some("t")));
            assert!(req.warnings.is_empty(), "{:?}", req.warnings);
            assert_eq!(req.media.code.as_deref(), (media == Media::PlayDtmf).then_some("#"));
            assert_eq!(req.media.file.as_deref(), (media == Media::PlayMedia).then_some("hold.wav"));
        }
    }

    #[test]
    fn media_actions_run_through_the_ng_path() {
        use srtpgate_testkit::daemon::padded_sdp;
        use srtpgate_testkit::ng::{answer, offer};
        let (s, _) = crate::serve::tests::server(43_200, super::super::config::ServeArgs::default());
        for r in [offer("c", "a", &padded_sdp(1, 40_000, 0)), answer("c", "a", "b", &padded_sdp(1, 40_100, 0))] {
            let req = srtpgate_ng::parse_request(&r.to_bytes()).expect("parses");
            let v = s.control.lock().expect("lock").handle(&req);
            assert_eq!(v.get("result").and_then(srtpgate_ng::Value::as_str), Some("ok"));
        }
        let run = |tag: &str, media, code: Option<&str>, file: Option<&str>| {
            leg_media(&s, "c", tag, media, code.map(Into::into), file.map(Into::into))
        };
        let controls = |party: usize| {
            let c = s.control.lock().expect("lock");
            let d = super::super::ui_view::detail(&c.table, "c").expect("detail");
            let m = &d["media"][party];
            assert_eq!(m["tag"], ["a", "b"][party]);
            let on = |k: &str| m[k].as_bool().expect("bool");
            (on("blocked"), on("silenced"), on("dtmf_blocked"))
        };
        assert_eq!(run("a", Media::Block, None, None), Ok(String::new()));
        assert_eq!((controls(0), controls(1)), ((true, false, false), (false, false, false)));
        {
            // The leg's bits for the worker; the direction the page set stays.
            let c = s.control.lock().expect("lock");
            let call = c.table.call("c").expect("call");
            let leg = &call.streams[0].as_ref().expect("stream").legs[0];
            assert_eq!(leg.stats.blocked() & crate::relay::stats::MUTED, crate::relay::stats::MUTED);
            let d = super::super::ui_view::detail(&c.table, "c").expect("detail");
            assert_eq!(d["call"]["legs"][0]["direction"], "sendrecv");
        }
        assert_eq!(run("b", Media::Silence, None, None), Ok(String::new()));
        assert_eq!(run("b", Media::BlockDtmf, None, None), Ok(String::new()));
        assert_eq!((controls(0), controls(1)), ((true, false, false), (false, true, true)));
        for (tag, media) in [("a", Media::Unblock), ("b", Media::Unsilence), ("b", Media::UnblockDtmf)] {
            assert_eq!(run(tag, media, None, None), Ok(String::new()));
        }
        assert_eq!((controls(0), controls(1)), ((false, false, false), (false, false, false)));
        // A digit from a, played to b.
        assert_eq!(run("a", Media::PlayDtmf, Some("5"), None), Ok(String::new()));
        assert!(s.control.lock().expect("lock").table.call("c").expect("call").controls.players[1].is_some());
        assert_eq!(run("b", Media::StopMedia, None, None), Ok(String::new()));
        // NG's refusals, as NG words them.
        let e = run("zz", Media::Block, None, None).unwrap_err();
        assert_eq!(e, "block media on leg 'zz' of call 'c': From-tag given, but no such tag exists");
        let e = run("a", Media::StopMedia, None, None).unwrap_err();
        assert!(e.ends_with("Not currently playing media"), "{e}");
        let e = run("a", Media::PlayMedia, None, Some("hold.wav")).unwrap_err();
        assert!(e.starts_with("play media on leg 'a' of call 'c': ") && e.contains("--media-dir"), "{e}");
        let e = leg_media(&s, "nope", "a", Media::Block, None, None).unwrap_err();
        assert!(e.ends_with("Unknown call-ID"), "{e}");
        // Counted as NG commands, the refused ones too.
        let c = s.control.lock().expect("lock");
        assert_eq!(c.table.totals.commands.get("block media"), Some(&3));
    }

    #[test]
    fn credentials_sessions_and_origins() {
        let u = ui(false);
        assert_eq!(u.access(&headers(&[])), None);
        assert_eq!(u.access(&headers(&[("authorization", "Bearer tok")])), Some(Access::Write("token".into())));
        assert_eq!(u.access(&headers(&[("authorization", "Bearer tok2")])), None);
        let form = |t: Option<&str>, user: Option<&str>, p: Option<&str>| LoginForm {
            token: t.map(Into::into),
            user: user.map(Into::into),
            password: p.map(Into::into),
        };
        assert_eq!(u.check(&form(Some("tok"), None, None)), Some("token".into()));
        assert_eq!(u.check(&form(Some("bad"), None, None)), None);
        assert_eq!(u.check(&form(None, Some("ops"), Some("secret"))), Some("ops".into()));
        assert_eq!(u.check(&form(None, Some("ops"), Some("wrong"))), None);
        assert_eq!(u.check(&form(None, Some("root"), Some("secret"))), None);
        let id = u.open_session("ops".into()).expect("session");
        let c = format!("a=b; {COOKIE}={id}");
        assert_eq!(u.access(&headers(&[("cookie", &c)])), Some(Access::Write("ops".into())));
        assert_eq!(u.access(&headers(&[("cookie", "srtpgate_session=00")])), None);
        // Open read-only access: watching without a credential.
        assert_eq!(ui(true).access(&headers(&[])), Some(Access::Read));
        // Origins.
        assert!(same_origin(&headers(&[("host", "127.0.0.1:8080")])));
        assert!(same_origin(&headers(&[("host", "127.0.0.1:8080"), ("origin", "http://127.0.0.1:8080")])));
        assert!(!same_origin(&headers(&[("host", "127.0.0.1:8080"), ("origin", "http://evil.example")])));
        assert!(!same_origin(&headers(&[("host", "127.0.0.1:8080"), ("origin", "null")])));
        assert!(!same_origin(&headers(&[("origin", "http://127.0.0.1:8080")])));
    }
}
