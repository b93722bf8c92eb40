//! A `redis-server` of a test's own (the calls kept across restarts), on
//! a free port, without disk; skipped, saying so, where Redis is not
//! installed.

use crate::daemon::LO;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `redis-server` of the test's own, on a free port, without disk.
pub struct Redis {
    /// The server process.
    pub child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
}

impl Redis {
    pub fn start() -> Option<Redis> {
        let port = std::net::TcpListener::bind((LO, 0)).ok()?.local_addr().ok()?.port();
        let r = Redis { child: Redis::spawn(port)?, port };
        r.ready().then_some(r)
    }

    /// A test's Redis, or `None` (said on stderr) where there is no
    /// `redis-server`; where the test command installs it
    /// (`SRTPGATE_REQUIRE=redis`), its absence fails.
    pub fn for_test() -> Option<Redis> {
        let r = Redis::start();
        if r.is_none() {
            crate::skip(
                "redis",
                "restart tests",
                "redis-server is not installed or did not start (Debian package redis-server)",
            );
        }
        r
    }

    /// `redis-server` on `port`, without disk.
    pub fn spawn(port: u16) -> Option<Child> {
        Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()
    }

    /// Waits up to 5 s for `PONG`.
    pub fn ready(&self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if self.command(&["PING"]).is_some_and(|p| p.starts_with(b"+PONG")) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// The relay's flags to keep its calls in this Redis, with a key file of
    /// `name`, under a namespace of its own: `name` and this process's id,
    /// returned first (test binaries run side by side on one Redis).
    pub fn relay_args(&self, name: &str) -> (String, Vec<String>) {
        let dir = super::daemon::tmp_dir().join("redis-keys");
        std::fs::create_dir_all(&dir).expect("dir");
        let key_file = dir.join(format!("{name}.key"));
        std::fs::write(&key_file, "5f".repeat(32)).expect("key file");
        let url = format!("redis://127.0.0.1:{}/0", self.port);
        let ns = format!("{name}{}", std::process::id());
        let args = ["--redis", &url, "--redis-key-file", &key_file.to_string_lossy(), "--redis-namespace", &ns];
        (ns.clone(), args.map(str::to_string).to_vec())
    }

    /// One command, its raw RESP reply: read until the reply is whole (a
    /// test that times a failover counts the time spent here).
    pub fn command(&self, args: &[&str]) -> Option<Vec<u8>> {
        let mut s = TcpStream::connect((LO, self.port)).ok()?;
        let mut req = format!("*{}\r\n", args.len());
        for a in args {
            req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        s.write_all(req.as_bytes()).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        let mut out = Vec::new();
        let mut buf = [0u8; 65536];
        while reply_end(&out, 0).is_none() {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => return None,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
        }
        Some(out)
    }
}

/// Where the RESP value at `at` in `b` ends, or None while it is not whole.
fn reply_end(b: &[u8], at: usize) -> Option<usize> {
    let line_end = at + b.get(at..)?.windows(2).position(|w| w == b"\r\n")?;
    let head = std::str::from_utf8(&b[at + 1..line_end]).ok()?;
    let next = line_end + 2;
    match b.get(at)? {
        b'$' => {
            let n: i64 = head.parse().ok()?;
            let end = if n < 0 { next } else { next + n as usize + 2 };
            (b.len() >= end).then_some(end)
        }
        b'*' => {
            let n: i64 = head.parse().ok()?;
            (0..n.max(0)).try_fold(next, |pos, _| reply_end(b, pos))
        }
        _ => Some(next),
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::reply_end;

    #[test]
    fn a_reply_is_whole_only_once_all_of_it_came() {
        let r = b"*3\r\n$3\r\nabc\r\n:7\r\n$-1\r\n";
        assert_eq!(reply_end(r, 0), Some(r.len()));
        for cut in 0..r.len() {
            assert_eq!(reply_end(&r[..cut], 0), None, "cut at {cut}");
        }
        assert_eq!(reply_end(b"+OK\r\n", 0), Some(5));
        assert_eq!(reply_end(b"*0\r\n", 0), Some(4));
    }
}
