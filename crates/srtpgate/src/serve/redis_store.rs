//! Calls kept in Redis, so that a restarted relay (or another one taking
//! over its addresses) resumes them without ever reusing keystream.
//!
//! What is kept, per call (`<namespace>:call:<Call-ID>`): its signalling
//! state (tags, m-lines, each side's address, port, peer, SDES keys), as
//! JSON sealed with AES-256-GCM under the key of `redis_key_file` (the
//! Redis key's name is the associated data, so a record cannot be moved
//! to another call). Per call also a hash (`<namespace>:idx:<Call-ID>`) of
//! where each SRTP stream stands, in the clear (indices are not secret):
//!
//! - for each stream the relay sends on, a **reservation**: the highest
//!   SRTP index and the SRTCP index it may use. The worker's context
//!   refuses anything beyond it ([`srtp::Context::reserve`]); the control
//!   thread raises it ahead of use, and the worker is told only after
//!   Redis has the new value. So whatever a relay sent before a crash is
//!   covered by what Redis holds, and the relay that resumes takes every
//!   index up to it as used;
//! - for each stream it receives, the highest index seen (written every few
//!   seconds: it carries the rollover counter across the restart, and
//!   replays of what came before it are refused);
//! - each master key's use (its lifetime).
//!
//! The records, their sealing and the index fields are
//! `srtpgate_calls::record`'s; this file is the store: the connection, the
//! writer thread, and loading at start.
//!
//! One relay at a time owns a namespace's calls: it holds the namespace's
//! **lease** (`<namespace>:lease`, `INSTANCE EPOCH`, expiring after
//! `redis_lease_ms` unless renewed, every third of it). A relay starts only
//! once it holds the lease: at once when the lease is free or its own
//! instance's (a restart), else when the holder stops renewing it (a
//! standby). Each taking raises `<namespace>:epoch`, so a relay whose lease
//! was taken over, even by its own instance restarted, is **fenced**: its
//! writes are refused (each batch runs in a transaction watched on the
//! lease), its reservations stop growing, and within the 0.75 s reserved
//! ahead its media stops. Two relays never send under the same key and
//! index.
//!
//! Writes go through one thread that owns the connection, in pipelined
//! batches; the signalling and the media never wait for Redis. While Redis
//! cannot be reached, writes wait and are retried, so reservations are not
//! raised: a stream that reaches the end of its reservation stops (its
//! packets are counted as `not_reserved`) rather than go on unprotected by
//! a persisted reservation.

use super::config::RedisConfig;
use crossbeam_channel::{Receiver, Sender};
pub use srtpgate_calls::record::Loaded;
use srtpgate_calls::record::{CallRecord, Sealer};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;
use zeroize::Zeroizing;

/// A Redis URL for the log: a password in it is not shown.
pub fn redacted(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(i), Some(at)) if at > i => format!("{}***{}", &url[..i + 3], &url[at..]),
        _ => url.to_string(),
    }
}

/// Work that runs once a write is in Redis (raising a reservation).
pub type Then = Box<dyn FnOnce() + Send>;

enum Write {
    /// Give the lease up (a clean stop, after every other write).
    Release,
    Call {
        id: String,
        record: Vec<u8>,
    },
    Delete {
        id: String,
    },
    Fields {
        id: String,
        fields: Vec<(String, Vec<u8>)>,
        then: Vec<Then>,
    },
}

/// The relay's handle on Redis.
pub struct Store {
    tx: Sender<Write>,
    sealer: Arc<Sealer>,
    ns: String,
    /// Failed Redis operations (each retried).
    pub errors: Arc<AtomicU64>,
    /// Batches written.
    pub batches: Arc<AtomicU64>,
    /// Writes waiting for Redis.
    pub pending: Arc<AtomicU64>,
    /// Times a write went through after failures (Redis may have come back
    /// empty: the relay then writes everything again).
    pub recoveries: Arc<AtomicU64>,
    /// Another relay (or this instance restarted) took the lease: nothing
    /// this relay writes goes to Redis any more.
    pub fenced: Arc<AtomicBool>,
}

impl Store {
    /// Connects (failing start-up when Redis cannot be reached: a relay
    /// asked to keep its calls must not start without them), reads back
    /// the calls kept, and starts the writer thread.
    pub fn open(cfg: &RedisConfig) -> Result<(Store, Vec<Loaded>), String> {
        let shown = redacted(&cfg.url);
        let client = redis::Client::open(cfg.url.as_str()).map_err(|e| format!("redis {shown}: {e}"))?;
        let mut con = connect(&client).map_err(|e| format!("redis {shown}: {e}"))?;
        let sealer = Arc::new(Sealer::new(&cfg.key));
        let ns = cfg.namespace.clone();
        let lease = Lease::take(&mut con, &ns, &cfg.instance, cfg.lease)?;
        let loaded = load(&mut con, &ns, &sealer)?;
        let (tx, rx) = crossbeam_channel::unbounded();
        let store = Store {
            tx,
            sealer,
            ns: ns.clone(),
            errors: Arc::default(),
            batches: Arc::default(),
            pending: Arc::default(),
            recoveries: Arc::default(),
            fenced: Arc::default(),
        };
        let counters = Counters {
            errors: store.errors.clone(),
            batches: store.batches.clone(),
            pending: store.pending.clone(),
            recoveries: store.recoveries.clone(),
            fenced: store.fenced.clone(),
        };
        std::thread::Builder::new()
            .name("redis".into())
            .spawn(move || writer(client, con, ns, lease, rx, counters))
            .map_err(|e| format!("cannot start the Redis thread: {e}"))?;
        Ok((store, loaded))
    }

    /// Keeps (replaces) a call's record.
    pub fn put_call(&self, record: &CallRecord) {
        let plain = Zeroizing::new(serde_json::to_vec(record).expect("a call record serializes"));
        let sealed = self.sealer.seal(&call_key(&self.ns, &record.id), &plain);
        self.send(Write::Call { id: record.id.clone(), record: sealed });
    }

    /// Forgets a call (record and indices).
    pub fn delete(&self, id: &str) {
        self.send(Write::Delete { id: id.to_string() });
    }

    /// Writes index fields of a call, each value sealed (bound to the call
    /// and the field: one cannot be moved to lower another's reservation);
    /// `then` runs once Redis has them.
    pub fn put_fields(&self, id: &str, fields: Vec<(String, String)>, then: Vec<Then>) {
        let fields = fields
            .into_iter()
            .map(|(f, v)| {
                let sealed = self.sealer.seal(&field_name(&self.ns, id, &f), v.as_bytes());
                (f, sealed)
            })
            .collect();
        self.send(Write::Fields { id: id.to_string(), fields, then });
    }

    /// Waits up to `within` for every write queued so far to reach Redis
    /// (a clean stop). Returns whether they did.
    pub fn written(&self, within: Duration) -> bool {
        let deadline = std::time::Instant::now() + within;
        while self.pending.load(Relaxed) > 0 {
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }

    /// Gives the namespace's lease up once every write queued so far is
    /// in Redis (a clean stop: a standby takes over at once).
    pub fn release(&self) {
        self.send(Write::Release);
    }

    fn send(&self, w: Write) {
        self.pending.fetch_add(1, Relaxed);
        let _ = self.tx.send(w);
    }
}

fn call_key(ns: &str, id: &str) -> String {
    format!("{ns}:call:{id}")
}

fn idx_key(ns: &str, id: &str) -> String {
    format!("{ns}:idx:{id}")
}

/// The name an index value is sealed under.
fn field_name(ns: &str, id: &str, field: &str) -> String {
    format!("{ns}:idx:{id}\0{field}")
}

struct Counters {
    errors: Arc<AtomicU64>,
    batches: Arc<AtomicU64>,
    pending: Arc<AtomicU64>,
    recoveries: Arc<AtomicU64>,
    fenced: Arc<AtomicBool>,
}

/// Takes the lease: free, or its holder is this instance (a restart). The
/// epoch goes up either way, which fences a holder still running.
/// KEYS: lease, epoch. ARGV: instance, lease ms. Returns
/// `{1, "INSTANCE EPOCH"}`, or `{0, holder, ms left}`.
const TAKE: &str = r"
local v = redis.call('GET', KEYS[1])
if v and string.match(v, '^(.*) %d+$') ~= ARGV[1] then
  return {0, v, redis.call('PTTL', KEYS[1])}
end
local mine = ARGV[1] .. ' ' .. redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], mine, 'PX', ARGV[2])
return {1, mine, 0}
";

/// Renews the lease while it is this relay's: also when it expired while
/// Redis was away and nobody has taken it since (the epoch is still ours,
/// or gone with everything else: a Redis that came back empty).
/// KEYS: lease, epoch. ARGV: `INSTANCE EPOCH`, lease ms, epoch. Returns 1
/// when held, 0 when fenced.
const RENEW: &str = r"
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
local e = redis.call('GET', KEYS[2])
if not v and (e == ARGV[3] or not e) then
  redis.call('SET', KEYS[2], ARGV[3])
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
";

/// Gives the lease up at a clean stop, while it is this relay's, so that a
/// standby takes over at once. KEYS: lease. ARGV: `INSTANCE EPOCH`.
const RELEASE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
";

/// The namespace's lease, as this relay holds it.
struct Lease {
    key: String,
    epoch_key: String,
    /// `INSTANCE EPOCH`: the lease's value while it is ours.
    mine: String,
    epoch: String,
    ttl: Duration,
    renewed: std::time::Instant,
}

impl Lease {
    /// Takes the namespace's lease, waiting while another instance holds
    /// it (a standby: it takes over once the holder stops renewing).
    fn take(con: &mut redis::Connection, ns: &str, instance: &str, ttl: Duration) -> Result<Lease, String> {
        let (key, epoch_key) = (format!("{ns}:lease"), format!("{ns}:epoch"));
        let mut said = None;
        loop {
            // EVAL: the scripts are short and run once a renewal.
            let (won, value, left): (i64, String, Option<i64>) = redis::cmd("EVAL")
                .arg(TAKE)
                .arg(2)
                .arg(&key)
                .arg(&epoch_key)
                .arg(instance)
                .arg(ttl.as_millis() as u64)
                .query(con)
                .map_err(|e| format!("redis: taking the lease of namespace {ns}: {e}"))?;
            if won == 1 {
                let epoch = value.rsplit(' ').next().unwrap_or_default().to_string();
                tracing::info!("redis: lease of namespace {ns} taken as {value}");
                return Ok(Lease { key, epoch_key, mine: value, epoch, ttl, renewed: std::time::Instant::now() });
            }
            if said.as_deref() != Some(value.as_str()) {
                tracing::warn!(
                    "redis: namespace {ns} is held by {value} (its lease ends in {} ms unless renewed): \
                     this relay waits to take over",
                    left.unwrap_or(0)
                );
                said = Some(value);
            }
            std::thread::sleep((ttl / 6).max(Duration::from_millis(50)));
        }
    }

    /// Renews the lease when a third of it has passed. Returns false once
    /// it is another's.
    fn renew_due(&mut self, con: &mut redis::Connection, force: bool) -> redis::RedisResult<bool> {
        if !force && self.renewed.elapsed() < self.ttl / 3 {
            return Ok(true);
        }
        let held: i64 = redis::cmd("EVAL")
            .arg(RENEW)
            .arg(2)
            .arg(&self.key)
            .arg(&self.epoch_key)
            .arg(&self.mine)
            .arg(self.ttl.as_millis() as u64)
            .arg(&self.epoch)
            .query(con)?;
        if held == 1 {
            self.renewed = std::time::Instant::now();
        }
        Ok(held == 1)
    }

    /// Runs `pipe` as a transaction only while the lease is ours: renewed,
    /// then watched, so that a taking between the check and the writes
    /// aborts them. `Ok(false)`: fenced.
    fn write(&mut self, con: &mut redis::Connection, pipe: &redis::Pipeline) -> redis::RedisResult<bool> {
        loop {
            if !self.renew_due(con, true)? {
                return Ok(false);
            }
            redis::cmd("WATCH").arg(&self.key).query::<()>(con)?;
            let now: Option<String> = redis::cmd("GET").arg(&self.key).query(con)?;
            if now.as_deref() != Some(self.mine.as_str()) {
                redis::cmd("UNWATCH").query::<()>(con)?;
                continue;
            }
            // EXEC answers nil when the watched lease changed.
            let done: Option<redis::Value> = pipe.clone().atomic().query(con)?;
            if done.is_some() {
                return Ok(true);
            }
        }
    }
}

fn connect(client: &redis::Client) -> redis::RedisResult<redis::Connection> {
    let con = client.get_connection_with_timeout(Duration::from_secs(2))?;
    con.set_read_timeout(Some(Duration::from_secs(2)))?;
    con.set_write_timeout(Some(Duration::from_secs(2)))?;
    Ok(con)
}

/// The keys of the namespace that match `pattern` (`*` after the prefix).
fn scan(con: &mut redis::Connection, pattern: &str) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    let mut cursor = 0u64;
    loop {
        let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(1000)
            .query(con)
            .map_err(|e| format!("redis: reading the calls kept: {e}"))?;
        names.extend(batch);
        if next == 0 {
            return Ok(names);
        }
        cursor = next;
    }
}

/// Reads every call of the namespace. A record that does not open or parse
/// is skipped with an error in the log (and left in Redis). Index hashes of
/// no call (a call that was not kept, when the relay stopped) are deleted.
fn load(con: &mut redis::Connection, ns: &str, sealer: &Sealer) -> Result<Vec<Loaded>, String> {
    let names = scan(con, &format!("{ns}:call:*"))?;
    for idx in scan(con, &format!("{ns}:idx:*"))? {
        let Some(id) = idx.strip_prefix(&format!("{ns}:idx:")) else { continue };
        if !names.contains(&call_key(ns, id)) {
            let _: redis::RedisResult<()> = redis::cmd("DEL").arg(&idx).query(con);
        }
    }
    let mut out = Vec::new();
    for name in names {
        let Some(id) = name.strip_prefix(&format!("{ns}:call:")) else { continue };
        let sealed: Option<Vec<u8>> =
            redis::cmd("GET").arg(&name).query(con).map_err(|e| format!("redis: reading {name}: {e}"))?;
        let Some(sealed) = sealed else { continue };
        let record = match sealer
            .open(&name, &sealed)
            .and_then(|p| serde_json::from_slice::<CallRecord>(&p).map_err(|e| format!("does not parse: {e}")))
        {
            Ok(r) if r.id == id => r,
            Ok(_) => {
                tracing::error!(call_id = id, "kept call names another Call-ID; skipped");
                continue;
            }
            Err(e) => {
                tracing::error!(call_id = id, "kept call skipped: {e}");
                continue;
            }
        };
        let sealed: HashMap<String, Vec<u8>> = redis::cmd("HGETALL")
            .arg(idx_key(ns, id))
            .query(con)
            .map_err(|e| format!("redis: reading the indices of {id}: {e}"))?;
        let mut indexes = HashMap::new();
        for (f, v) in sealed {
            match sealer.open(&field_name(ns, id, &f), &v).ok().and_then(|p| String::from_utf8(p.to_vec()).ok()) {
                Some(v) => {
                    indexes.insert(f, v);
                }
                None => tracing::error!(call_id = id, field = f, "kept index does not open; left out"),
            }
        }
        out.push(Loaded { record, indexes });
    }
    Ok(out)
}

/// The writer thread: renews the lease, batches what is queued into one
/// transaction, retries a failed batch (reconnecting) until it is written,
/// then runs its `then`s. Once fenced, it drops every write (their `then`s
/// never run: reservations stop growing).
fn writer(
    client: redis::Client,
    con: redis::Connection,
    ns: String,
    mut lease: Lease,
    rx: Receiver<Write>,
    c: Counters,
) {
    let mut con = Some(con);
    let mut backoff = Duration::from_millis(50);
    loop {
        let first = match rx.recv_timeout(lease.ttl / 3) {
            Ok(w) => Some(w),
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => None,
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return,
        };
        if c.fenced.load(Relaxed) {
            let n = first.into_iter().chain(rx.try_iter()).count();
            c.pending.fetch_sub(n as u64, Relaxed);
            continue;
        }
        let Some(first) = first else {
            // Quiet: renew the lease on its own.
            let renewed = match con.as_mut() {
                Some(k) => lease.renew_due(k, false),
                None => connect(&client).and_then(|mut k| {
                    let r = lease.renew_due(&mut k, false);
                    con = Some(k);
                    r
                }),
            };
            match renewed {
                Ok(true) => {}
                Ok(false) => fence(&c, &ns, &lease),
                Err(e) => {
                    c.errors.fetch_add(1, Relaxed);
                    tracing::error!("redis: renewing the lease: {e}");
                    con = None;
                }
            }
            continue;
        };
        let mut batch = vec![first];
        batch.extend(rx.try_iter().take(4095));
        let mut pipe = redis::pipe();
        for w in &batch {
            match w {
                Write::Release => {
                    pipe.cmd("EVAL").arg(RELEASE).arg(1).arg(&lease.key).arg(&lease.mine).ignore();
                }
                Write::Call { id, record } => {
                    pipe.cmd("SET").arg(call_key(&ns, id)).arg(record.as_slice()).ignore();
                }
                Write::Delete { id } => {
                    pipe.cmd("DEL").arg(call_key(&ns, id)).arg(idx_key(&ns, id)).ignore();
                }
                Write::Fields { id, fields, .. } => {
                    if !fields.is_empty() {
                        let mut c = redis::cmd("HSET");
                        c.arg(idx_key(&ns, id));
                        for (f, v) in fields {
                            c.arg(f).arg(v.as_slice());
                        }
                        pipe.add_command(c).ignore();
                    }
                }
            }
        }
        let mut failed = false;
        let written = loop {
            let result = match con.as_mut() {
                Some(k) => lease.write(k, &pipe),
                None => connect(&client).and_then(|mut k| {
                    let r = lease.write(&mut k, &pipe);
                    con = Some(k);
                    r
                }),
            };
            match result {
                Ok(held) => {
                    backoff = Duration::from_millis(50);
                    if failed && held {
                        c.recoveries.fetch_add(1, Relaxed);
                        tracing::warn!("redis: writes go through again");
                    }
                    break held;
                }
                Err(e) => {
                    failed = true;
                    let n = c.errors.fetch_add(1, Relaxed);
                    if n < 10 || n.is_power_of_two() {
                        tracing::error!("redis: {e}; {} writes wait (retrying)", batch.len());
                    }
                    con = None;
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                }
            }
        };
        c.batches.fetch_add(1, Relaxed);
        c.pending.fetch_sub(batch.len() as u64, Relaxed);
        if written && batch.iter().any(|w| matches!(w, Write::Release)) {
            // Given up: nothing more is written or renewed.
            tracing::info!("redis: lease of namespace {ns} given up ({})", lease.mine);
            c.fenced.store(true, Relaxed);
        }
        if !written {
            fence(&c, &ns, &lease);
            continue;
        }
        for w in batch {
            if let Write::Fields { then, .. } = w {
                for f in then {
                    f();
                }
            }
        }
    }
}

/// The lease is another's: this relay writes nothing more, and its media
/// stops at the end of what it has reserved.
fn fence(c: &Counters, ns: &str, lease: &Lease) {
    if !c.fenced.swap(true, Relaxed) {
        tracing::error!(
            "redis: the lease of namespace {ns} was taken over (this relay held it as {}): this relay is fenced; \
             it writes nothing more, its media stops within the 0.75 s it reserved, and new calls are refused",
            lease.mine
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_in_the_url_is_not_logged() {
        assert_eq!(redacted("redis://user:secret@10.0.0.1:6379/0"), "redis://***@10.0.0.1:6379/0");
        assert_eq!(redacted("redis://127.0.0.1/"), "redis://127.0.0.1/");
    }
}
