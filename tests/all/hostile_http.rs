//! `serve --http` attacked as an attacker would: a request per hostile class (issue 25: the
//! health endpoint, slow and idle connections, many clients' code cells, huge names, hostile
//! text, the HTTP front's bounds and errors), each against the real binary over real sockets,
//! with real upstream servers (`tests/fixtures/mcp/servers`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::BIN;

/// A token strong enough for `--auth-token`.
const TOKEN: &str = "test-token-0123456789abcdef";

fn servers_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/servers")
}

fn node_server(script: &str, args: &[&str]) -> Value {
    let mut all = vec![servers_dir().join(script).display().to_string()];
    all.extend(args.iter().map(|a| a.to_string()));
    json!({"command": "node", "args": all})
}

fn config_file(dir: &Path, config: Value) -> PathBuf {
    let path = dir.join("toolsearch.json5");
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

/// `toolsearch serve --http 127.0.0.1:0` with stderr to a file.
struct Serve {
    child: Child,
    addr: String,
    stderr: PathBuf,
}

impl Serve {
    fn start(config: &Path, args: &[&str], stderr: &Path) -> Serve {
        Serve::start_with(config, args, stderr, |_| {})
    }

    fn start_with(
        config: &Path,
        args: &[&str],
        stderr: &Path,
        adjust: impl FnOnce(&mut Command),
    ) -> Serve {
        let mut command = Command::new(BIN);
        command
            .args(["serve", "--http", "127.0.0.1:0", "--config"])
            .arg(config)
            .args(args)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(stderr).unwrap());
        adjust(&mut command);
        let mut child = command.spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(
            line.starts_with("http://127.0.0.1:"),
            "serve did not start: {line:?} {}",
            std::fs::read_to_string(stderr).unwrap_or_default()
        );
        let addr = line
            .trim()
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_string();
        Serve {
            child,
            addr,
            stderr: stderr.to_path_buf(),
        }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 exchange on a fresh connection: (status, body).
fn exchange(addr: &str, head: &str, body: &[u8]) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut request = head.replace('\n', "\r\n");
    request.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    stream.write_all(request.as_bytes()).unwrap();
    let _ = stream.write_all(body);
    read_response(&mut stream)
}

fn read_response(stream: &mut TcpStream) -> (u16, String) {
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let response = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    let body = if chunked {
        crate::support::dechunk(rest)
    } else {
        rest.to_string()
    };
    (status, body)
}

/// The head of a POST to `/mcp` with the MCP headers (and `extra` lines).
fn mcp_head(addr: &str, extra: &str) -> String {
    format!(
        "POST /mcp HTTP/1.1\nHost: {addr}\nContent-Type: application/json\nAccept: application/json, text/event-stream\n{extra}"
    )
}

/// A sessionless (MCP 2026-07-28) `tools/call` body.
fn sessionless_call(name: &str, arguments: Value) -> Vec<u8> {
    json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {
            "name": name, "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    })
    .to_string()
    .into_bytes()
}

fn sessionless_head(addr: &str, name: &str, extra: &str) -> String {
    mcp_head(
        addr,
        &format!(
            "MCP-Protocol-Version: 2026-07-28\nMcp-Method: tools/call\nMcp-Name: {name}\n{extra}"
        ),
    )
}

/// Opens a legacy (2025-06-18) session; returns its id.
fn open_session(addr: &str, extra: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let head = mcp_head(addr, extra).replace('\n', "\r\n");
    write!(
        stream,
        "{head}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = String::new();
    let _ = stream.read_to_string(&mut raw);
    let id = raw
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("mcp-session-id")
                .then(|| v.trim().to_string())
        })
        .unwrap_or_else(|| panic!("no session id in {raw}"));
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let head = mcp_head(
        addr,
        &format!("{extra}Mcp-Session-Id: {id}\nMCP-Protocol-Version: 2025-06-18\n"),
    );
    let (status, body) = exchange(addr, &head, initialized.as_bytes());
    assert!(status == 202 || status == 200, "{status} {body}");
    id
}

/// A `tools/call` in a legacy session; returns the JSON-RPC answer (the first `data:` line of
/// its event stream that parses, or a JSON body).
fn session_call(addr: &str, session: &str, name: &str, arguments: Value) -> Value {
    let head = mcp_head(
        addr,
        &format!("Mcp-Session-Id: {session}\nMCP-Protocol-Version: 2025-06-18\n"),
    )
    .replace('\n', "\r\n");
    // Request ids are unique within a session (the server answers by id).
    static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(100);
    let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                      "params": {"name": name, "arguments": arguments}})
    .to_string();
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    write!(
        stream,
        "{head}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 65536];
    loop {
        let answer = seen
            .split_once("\r\n\r\n")
            .map(|(_, rest)| rest)
            .into_iter()
            .flat_map(|rest| rest.lines())
            .map(|l| l.strip_prefix("data:").unwrap_or(l).trim())
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v.get("id") == Some(&json!(id)));
        if let Some(answer) = answer {
            return answer;
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => panic!("no answer to the call: {seen}"),
            Ok(n) => seen.push_str(&String::from_utf8_lossy(&buf[..n])),
        }
    }
}

/// Whether the peer closed `stream` within `within` (EOF or reset), reading and dropping data.
fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    stream.set_read_timeout(Some(within)).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return false;
            }
            Err(_) => return true,
        }
    }
}

/// CPU time (user + system, clock ticks) a process used so far.
fn cpu_ticks(pid: i32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// Class 1: `/health` is behind the same Host/Origin check and token as `/mcp`, and never shows
/// an upstream's stderr.
#[test]
fn hostile_health_needs_the_token_and_an_allowed_host_and_hides_upstream_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let secret = "SECRET-PASSWORD-4f1c";
    let config = config_file(
        dir.path(),
        json!({"mcp": {"servers": {
            "leaky": node_server("hostile_text.mjs", &["--exit-at-start", "--secret", secret]),
        }}}),
    );
    let serve = Serve::start(
        &config,
        &["--mode", "tools", "--auth-token", TOKEN],
        &dir.path().join("stderr"),
    );
    let addr = serve.addr.clone();
    let get = |headers: &str| exchange(&addr, &format!("GET /health HTTP/1.1\n{headers}"), b"");
    // No token: refused, and nothing of the state is shown.
    let (status, body) = get(&format!("Host: {addr}\n"));
    assert_eq!(status, 401, "{body}");
    assert!(!body.contains("leaky") && !body.contains(secret), "{body}");
    // A wrong token, a lowercase scheme with the wrong token: refused.
    let (status, _) = get(&format!(
        "Host: {addr}\nAuthorization: Bearer wrong-token-wrong-token\n"
    ));
    assert_eq!(status, 401);
    // A rebinding page: right token or not, a foreign Host or Origin is refused first.
    let (status, body) = get(&format!(
        "Host: attacker.example\nAuthorization: Bearer {TOKEN}\n"
    ));
    assert_eq!(status, 403, "{body}");
    let (status, body) = get(&format!(
        "Host: {addr}\nOrigin: http://attacker.example\nAuthorization: Bearer {TOKEN}\n"
    ));
    assert_eq!(status, 403, "{body}");
    // With the token: the state, the outage named, the upstream's own stderr text not shown.
    let (status, body) = get(&format!("Host: {addr}\nAuthorization: bearer {TOKEN}\n"));
    assert_eq!(status, 200, "{body}");
    let health: Value = serde_json::from_str(&body).unwrap();
    assert!(health["upstreams"]["leaky"]["down"].is_string(), "{health}");
    assert!(
        !body.contains(secret) && !body.contains("hostile:"),
        "{body}"
    );
    drop(serve);

    // Without a token (loopback), the Host check still guards /health.
    let serve = Serve::start(&config, &["--mode", "tools"], &dir.path().join("stderr2"));
    let (status, _) = exchange(
        &serve.addr,
        "GET /health HTTP/1.1\nHost: rebind.example\n",
        b"",
    );
    assert_eq!(status, 403);
    let (status, body) = exchange(
        &serve.addr,
        &format!(
            "GET /health HTTP/1.1\nHost: localhost:{}\n",
            serve.addr.rsplit(':').next().unwrap()
        ),
        b"",
    );
    assert_eq!(status, 200, "{body}");
    assert!(!body.contains(secret), "{body}");
}

/// Class 2: a connection that sends nothing, half a head or half a body is closed after its
/// timeout; connections are capped; at the cap the server neither spins nor floods its log.
#[test]
fn hostile_slow_and_idle_connections_time_out_and_are_capped() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(dir.path(), json!({}));
    let serve = Serve::start(
        &config,
        &[
            "--mode",
            "tools",
            "--header-timeout-secs",
            "1",
            "--body-timeout-secs",
            "1",
        ],
        &dir.path().join("stderr"),
    );
    let addr = serve.addr.clone();
    // Nothing sent.
    let mut silent = TcpStream::connect(&addr).unwrap();
    // Half a head.
    let mut half_head = TcpStream::connect(&addr).unwrap();
    half_head
        .write_all(format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Ty").as_bytes())
        .unwrap();
    assert!(
        closed_within(&mut silent, Duration::from_secs(20)),
        "an idle connection stayed open"
    );
    assert!(
        closed_within(&mut half_head, Duration::from_secs(20)),
        "half a head stayed open"
    );
    // Half a body: answered 408 with a JSON-RPC error naming the timeout.
    let mut half_body = TcpStream::connect(&addr).unwrap();
    let head = mcp_head(&addr, "Content-Length: 100\n").replace('\n', "\r\n");
    half_body
        .write_all(format!("{head}\r\n{{\"jsonrpc\":").as_bytes())
        .unwrap();
    half_body
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let (status, body) = read_response(&mut half_body);
    assert_eq!(status, 408, "{body}");
    assert!(
        body.contains("body timeout") && body.contains("\"jsonrpc\""),
        "{body}"
    );
    drop(serve);

    // The cap: with room for 2 connections, a third waits until one closes.
    let serve = Serve::start(
        &config,
        &[
            "--mode",
            "tools",
            "--max-connections",
            "2",
            "--header-timeout-secs",
            "60",
        ],
        &dir.path().join("stderr2"),
    );
    let addr = serve.addr.clone();
    let idle_a = TcpStream::connect(&addr).unwrap();
    let _idle_b = TcpStream::connect(&addr).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let mut third = TcpStream::connect(&addr).unwrap();
    third
        .write_all(
            format!("GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .unwrap();
    third
        .set_read_timeout(Some(Duration::from_millis(1500)))
        .unwrap();
    let mut first = [0u8; 1];
    assert!(
        third.read(&mut first).is_err(),
        "a connection past the cap was served while the cap was full"
    );
    drop(idle_a);
    third
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let (status, _) = read_response(&mut third);
    assert_eq!(
        status, 200,
        "the waiting connection was not served once one closed"
    );
    assert!(
        serve.stderr().contains("connection cap"),
        "{}",
        serve.stderr()
    );
    drop(serve);

    // At the descriptor limit: the cap is lowered below it, the server does not spin, logs a
    // few lines, and serves again once the flood ends.
    let serve = Serve::start_with(
        &config,
        &["--mode", "tools", "--max-connections", "100000"],
        &dir.path().join("stderr3"),
        |command| {
            use std::os::unix::process::CommandExt;
            unsafe {
                command.pre_exec(|| {
                    let limit = libc::rlimit {
                        rlim_cur: 256,
                        rlim_max: 256,
                    };
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        },
    );
    let addr = serve.addr.clone();
    let flood: Vec<TcpStream> = (0..400)
        .filter_map(|_| TcpStream::connect(&addr).ok())
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let before = cpu_ticks(serve.pid());
    std::thread::sleep(Duration::from_secs(2));
    let used = cpu_ticks(serve.pid()) - before;
    // 2 s of wall time; a spinning accept loop uses all of it (200 ticks at 100 Hz).
    assert!(
        used < 60,
        "serve used {used} ticks of CPU in 2 s while flooded"
    );
    let log = serve.stderr();
    assert!(
        log.len() < 16 * 1024,
        "{} bytes of log while flooded",
        log.len()
    );
    assert!(log.contains("lowered"), "{log}");
    drop(flood);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, _) = exchange(&addr, &format!("GET /health HTTP/1.1\nHost: {addr}\n"), b"");
        if status == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "serve did not recover after the flood"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Class 8: a dozen looping cells from one client do not starve another client's cell, and a
/// cell that gets no turn within its deadline is answered "busy" instead of waiting on.
#[test]
fn hostile_code_cells_are_scheduled_fairly_between_clients_with_a_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let timeout_ms = 3_000u64;
    let config = config_file(
        dir.path(),
        json!({"tools": {"toolSearch": {"codeTimeoutMs": timeout_ms}}}),
    );
    let serve = Serve::start(&config, &["--mode", "code"], &dir.path().join("stderr"));
    let addr = serve.addr.clone();
    let hog = open_session(&addr, "");
    let polite = open_session(&addr, "");
    let loops: Vec<_> = (0..12)
        .map(|_| {
            let (addr, hog) = (addr.clone(), hog.clone());
            std::thread::spawn(move || {
                session_call(
                    &addr,
                    &hog,
                    "tool_search_code",
                    json!({"code": "while (true) {}"}),
                )
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let started = Instant::now();
    let answer = session_call(
        &addr,
        &polite,
        "tool_search_code",
        json!({"code": "return 6 * 7"}),
    );
    let waited = started.elapsed();
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert!(answer.to_string().contains("42"), "{answer}");
    // FIFO would run it after all twelve loops (3 rounds of timeouts on 4 slots); in turn, it
    // runs when the first running loop ends.
    assert!(
        waited < Duration::from_millis(2 * timeout_ms),
        "the polite client's cell waited {waited:?} behind another client's loops"
    );
    let answers: Vec<Value> = loops.into_iter().map(|t| t.join().unwrap()).collect();
    let busy = answers
        .iter()
        .filter(|a| a.to_string().contains("the sandbox is busy"))
        .count();
    let timed_out = answers
        .iter()
        .filter(|a| a.to_string().contains("wall-clock timeout"))
        .count();
    assert_eq!(busy + timed_out, 12, "{answers:?}");
    assert!(busy >= 1, "no loop was answered busy: {answers:?}");
}

/// Class 9: a huge unknown name is echoed bounded in every answer and log line, and a server
/// whose stderr nobody reads keeps answering.
#[test]
fn hostile_huge_names_are_echoed_bounded_and_an_unread_stderr_never_stalls() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(dir.path(), json!({}));
    let huge = "x".repeat(1 << 20);
    for mode in ["tools", "code", "directory", "direct"] {
        let serve = Serve::start(
            &config,
            &["--mode", mode],
            &dir.path().join(format!("stderr-{mode}")),
        );
        let addr = serve.addr.clone();
        let mut asks = vec![(huge.clone(), json!({}))];
        match mode {
            "tools" | "directory" => {
                asks.push(("tool_call".into(), json!({"id": huge, "args": {}})));
                asks.push(("tool_describe".into(), json!({"id": huge})));
            }
            "code" => asks.push((
                "tool_search_code".into(),
                json!({"code": format!("return await openclaw.tools.call({:?}, {{}})", huge)}),
            )),
            _ => {}
        }
        for (name, arguments) in asks {
            // The Mcp-Name header cannot carry 1 MiB: for the huge name itself it differs
            // from the body (a mismatch the server must not echo whole either).
            let header = if name.len() > 100 { "x" } else { name.as_str() };
            let (status, body) = exchange(
                &addr,
                &sessionless_head(&addr, header, ""),
                &sessionless_call(&name, arguments),
            );
            assert!(status == 200 || status == 400, "{mode}: {status}");
            assert!(
                body.len() < 8 * 1024,
                "{mode}: a {} byte answer to a 1 MiB name",
                body.len()
            );
        }
        let log = serve.stderr();
        assert!(log.len() < 16 * 1024, "{mode}: {} bytes of log", log.len());
    }

    // stderr on a pipe nobody reads, every event logged: requests are still answered.
    let mut child = Command::new(BIN)
        .args([
            "serve",
            "--mode",
            "tools",
            "--http",
            "127.0.0.1:0",
            "--config",
        ])
        .arg(&config)
        .env("RUST_LOG", "trace")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    let _unread = child.stderr.take();
    for _ in 0..40 {
        let (status, body) = exchange(
            &addr,
            &sessionless_head(&addr, "x", ""),
            &sessionless_call(&huge, json!({})),
        );
        assert_eq!(status, 200, "{body}");
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Class 10: hostile text (escape sequences, bidi and zero-width controls) from an upstream
/// reaches neither the terminal nor a direct tool definition.
#[test]
fn hostile_text_never_reaches_the_terminal_or_a_direct_definition() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(
        dir.path(),
        json!({"mcp": {"servers": {
            "down": node_server("hostile_text.mjs", &["--exit-at-start"]),
            "up": node_server("hostile_text.mjs", &[]),
        }}}),
    );
    let unsafe_char = |c: char| matches!(c, '\u{1b}' | '\u{7}' | '\u{9b}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200b}');
    // The CLI's terminal output, with every log line on.
    for args in [
        vec!["search", "render page"],
        vec!["call", "mcp:up:render", "--args", r#"{"page":"a"}"#],
        vec!["call", "mcp:down:render", "--args", "{}"],
        vec!["describe", "mcp:up:render"],
    ] {
        let out = Command::new(BIN)
            .args(&args)
            .arg("--config")
            .arg(&config)
            .env("RUST_LOG", "debug")
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            !text.chars().any(unsafe_char),
            "{args:?} printed a control: {:?}",
            text.chars().filter(|c| unsafe_char(*c)).collect::<String>()
        );
    }
    // serve's log and a direct definition.
    let serve = Serve::start_with(
        &config,
        &["--mode", "direct"],
        &dir.path().join("stderr"),
        |c| {
            c.env("RUST_LOG", "debug");
        },
    );
    let addr = serve.addr.clone();
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }}});
    let head = mcp_head(
        &addr,
        "MCP-Protocol-Version: 2026-07-28\nMcp-Method: tools/list\n",
    );
    let (status, body) = exchange(&addr, &head, list.to_string().as_bytes());
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    let render = answer["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"].as_str().unwrap_or_default().contains("render"))
        .cloned()
        .unwrap_or_else(|| panic!("no render tool in {answer}"));
    let text = render.to_string();
    let decoded: String = serde_json::from_str::<Value>(&text)
        .map(|v| v.to_string())
        .unwrap_or_default();
    assert!(
        render["description"]
            .as_str()
            .unwrap()
            .contains("Render a page"),
        "{render}"
    );
    for field in [
        render["description"].as_str().unwrap_or_default(),
        render["inputSchema"]["properties"]["page"]["description"]
            .as_str()
            .unwrap_or_default(),
        render["inputSchema"]["title"].as_str().unwrap_or_default(),
    ] {
        assert!(!field.chars().any(unsafe_char), "{field:?} in {decoded}");
    }
    // The values the model must send stay exact.
    assert_eq!(
        render["inputSchema"]["properties"]["page"]["enum"],
        json!(["a", "b"])
    );
    let log = serve.stderr();
    assert!(!log.chars().any(unsafe_char), "serve's log: {log:?}");
}

/// Class 12: one body bound (16 MiB, a JSON-RPC error naming it), 400 with a JSON-RPC error for
/// malformed JSON and batches, 404 for an unknown session's DELETE, any case of the `Bearer`
/// scheme, no weak tokens, and a call cut by the end of the SIGTERM grace answered in JSON-RPC.
#[test]
fn hostile_http_front_bounds_and_errors_are_the_documented_ones() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(
        dir.path(),
        json!({"mcp": {"servers": {"test": node_server("testserver.mjs", &[])}}}),
    );
    let serve = Serve::start(
        &config,
        &[
            "--mode",
            "tools",
            "--auth-token",
            TOKEN,
            "--grace-secs",
            "1",
        ],
        &dir.path().join("stderr"),
    );
    let addr = serve.addr.clone();
    let auth = format!("Authorization: BEARER {TOKEN}\n");
    // 5 MiB is within the bound (16 MiB): answered by the tool, not refused.
    let five = "y".repeat(5 << 20);
    let (status, body) = exchange(
        &addr,
        &sessionless_head(&addr, "tool_call", &auth),
        &sessionless_call(
            "tool_call",
            json!({"id": "mcp:test:echo", "args": {"text": five}}),
        ),
    );
    assert_eq!(status, 200, "{}", &body[..body.len().min(500)]);
    // 17 MiB: 413, a JSON-RPC error naming the bound.
    let big = "z".repeat(17 << 20);
    let (status, body) = exchange(
        &addr,
        &sessionless_head(&addr, "tool_call", &auth),
        &sessionless_call(
            "tool_call",
            json!({"id": "mcp:test:echo", "args": {"text": big}}),
        ),
    );
    assert_eq!(status, 413, "{body}");
    let error: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(error["jsonrpc"], "2.0");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("MAX_MCP_MESSAGE_BYTES")
            && error["error"]["message"]
                .as_str()
                .unwrap()
                .contains("16777216"),
        "{error}"
    );
    // Malformed JSON and a batch: 400, parse error / invalid request.
    let (status, body) = exchange(&addr, &mcp_head(&addr, &auth), b"{\"jsonrpc\": \"2.0\", ");
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["error"]["code"],
        -32700
    );
    let (status, body) = exchange(
        &addr,
        &mcp_head(&addr, &auth),
        br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
    );
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["error"]["code"],
        -32600
    );
    // DELETE of a session that does not exist: 404; of one that does: 204.
    let delete = |id: &str| {
        exchange(
            &addr,
            &format!(
                "DELETE /mcp HTTP/1.1\nHost: {addr}\nMcp-Session-Id: {id}\nMCP-Protocol-Version: 2025-06-18\n{auth}"
            ),
            b"",
        )
    };
    assert_eq!(delete("no-such-session").0, 404);
    let session = open_session(&addr, &auth);
    assert_eq!(delete(&session).0, 204);

    // A call still running at the end of the grace period: a JSON-RPC error, not a bare 500.
    let (tx, rx) = std::sync::mpsc::channel();
    let caller = {
        let addr = addr.clone();
        let auth = auth.clone();
        std::thread::spawn(move || {
            tx.send(()).unwrap();
            exchange(
                &addr,
                &sessionless_head(&addr, "tool_call", &auth),
                &sessionless_call(
                    "tool_call",
                    json!({"id": "mcp:test:sleep", "args": {"ms": 60000}}),
                ),
            )
        })
    };
    rx.recv().unwrap();
    std::thread::sleep(Duration::from_millis(800));
    unsafe {
        libc::kill(serve.pid(), libc::SIGTERM);
    }
    let (status, body) = caller.join().unwrap();
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body:?}"));
    assert_eq!(answer["jsonrpc"], "2.0");
    let message = answer.to_string();
    assert!(message.contains("grace period"), "{answer}");
    drop(serve);

    // A weak token is refused at start, saying why.
    let out = Command::new(BIN)
        .args([
            "serve",
            "--http",
            "127.0.0.1:0",
            "--auth-token",
            "x",
            "--config",
        ])
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("at least 16"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Class 7 over HTTP: an upstream answer that is not UTF-8 fails the call at once, naming the
/// server, with the error's echo of the answer bounded (a 1 MiB answer gives a short message).
#[test]
fn hostile_http_upstream_invalid_utf8_fails_the_call_at_once_and_bounded() {
    let mut upstream = Command::new("node")
        .arg(servers_dir().join("hostile_http_upstream.mjs"))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut url = String::new();
    BufReader::new(upstream.stdout.take().unwrap())
        .read_line(&mut url)
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(
        dir.path(),
        json!({"mcp": {"servers": {"badhttp": {"url": url.trim(), "callTimeoutMs": 120000}}}}),
    );
    for tool in ["mcp:badhttp:bad", "mcp:badhttp:bad_big"] {
        let started = Instant::now();
        let out = Command::new(BIN)
            .args(["call", tool, "--config"])
            .arg(&config)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{tool}: {stderr}");
        assert!(stderr.contains("\"badhttp\""), "{tool}: {stderr}");
        assert!(
            stderr.len() < 4096,
            "{tool}: {} bytes of error",
            stderr.len()
        );
        // Far below the 120 s call timeout: the answer failed the call, it did not wait it out.
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{tool}: {:?}",
            started.elapsed()
        );
    }
    let _ = upstream.kill();
    let _ = upstream.wait();
}
