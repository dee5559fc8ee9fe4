//! The worker's end of its IPC socket to the supervisor.
//!
//! Owns: [`Channel`], blocking frame I/O with a deadline on receive, and how the worker waits for
//! a reply (spinning for a short window, then sleeping in `poll`). Never does: run guest code,
//! harden the process, or decide what a frame means beyond its framing.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::time::{Duration, Instant};

use super::protocol::{self, HostFrame, PollWhen, Spin, Split};

/// Why [`Channel::recv`] failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChannelError {
    /// The socket failed or the supervisor closed it.
    Io,
    /// An oversized or unparsable frame.
    Malformed,
}

/// The worker's end of its IPC socket: blocking, with a deadline on receive.
pub(crate) struct Channel {
    /// `None` while detached (the zygote's template isolate, before a fork attaches the socket).
    file: Option<File>,
    buf: Vec<u8>,
    start: usize,
    scratch: Box<[u8]>,
    frame_cap: usize,
    offline: bool,
    /// How to wait for a reply once the cell runs.
    spin: Spin,
    /// How long to poll for `Run` after `Ready`.
    ready_spin: Duration,
    /// The CPU the supervisor's last frame came from.
    peer_cpu: Option<u32>,
    /// `Run` was received.
    running: bool,
}

impl Channel {
    /// Wraps the already-isolated socket fd.
    ///
    /// # Safety
    /// `fd` must be an open socket that nothing else owns.
    pub(crate) unsafe fn from_fd(fd: RawFd, frame_cap: usize) -> Channel {
        let mut chan = Channel::detached();
        // SAFETY: guaranteed by the caller.
        unsafe { chan.attach(fd, frame_cap) };
        chan
    }

    /// A channel without a socket: sends fail and receives see the socket closed until
    /// [`Channel::attach`] (only the offline rehearsal can use it).
    pub(crate) fn detached() -> Channel {
        Channel {
            file: None,
            buf: Vec::new(),
            start: 0,
            scratch: vec![0u8; 64 * 1024].into_boxed_slice(),
            frame_cap: 0,
            offline: false,
            spin: Spin {
                when: PollWhen::Always,
                micros: DEFAULT_SPIN_US,
            },
            ready_spin: Duration::from_micros(u64::from(DEFAULT_SPIN_US)),
            peer_cpu: None,
            running: false,
        }
    }

    /// Gives the channel its socket and the frame cap (in a forked worker whose isolate came
    /// from the zygote's template).
    ///
    /// # Safety
    /// `fd` must be an open socket that nothing else owns.
    pub(crate) unsafe fn attach(&mut self, fd: RawFd, frame_cap: usize) {
        // SAFETY: guaranteed by the caller.
        self.file = Some(unsafe { File::from_raw_fd(fd) });
        self.frame_cap = frame_cap;
    }

    /// Sets how the channel polls before sleeping: `spin` while a cell runs, `ready_spin_us` for
    /// `Run` after `Ready`.
    pub(crate) fn set_spin(&mut self, spin: Spin, ready_spin_us: u32) {
        self.spin = spin;
        self.ready_spin = Duration::from_micros(u64::from(ready_spin_us));
    }

    /// The largest frame either side may send.
    pub(crate) fn frame_cap(&self) -> usize {
        self.frame_cap
    }

    /// Writes already-encoded frames.
    pub(crate) fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.offline {
            return Ok(());
        }
        match &mut self.file {
            Some(file) => file.write_all(bytes),
            None => Err(io::ErrorKind::NotConnected.into()),
        }
    }

    /// Receives one frame; `Ok(None)` when `deadline` passed first.
    pub(crate) fn recv(
        &mut self,
        deadline: Option<Instant>,
    ) -> Result<Option<HostFrame>, ChannelError> {
        loop {
            if let Some(frame) = self.take_buffered()? {
                return Ok(Some(frame));
            }
            if self.offline || !self.wait_readable(deadline)? {
                return Ok(None);
            }
            let Some(file) = &mut self.file else {
                return Err(ChannelError::Io);
            };
            let n = loop {
                match file.read(&mut self.scratch) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => return Err(ChannelError::Io),
                }
            };
            if n == 0 {
                return Err(ChannelError::Io);
            }
            if self.start > 0 {
                self.buf.drain(..self.start);
                self.start = 0;
            }
            self.buf.extend_from_slice(&self.scratch[..n]);
        }
    }

    /// The next complete frame already in the buffer, if any.
    fn take_buffered(&mut self) -> Result<Option<HostFrame>, ChannelError> {
        match protocol::split_frame(&self.buf[self.start..], self.frame_cap) {
            Split::Frame { len } => {
                let body = self.start + protocol::HEADER..self.start + protocol::HEADER + len;
                let frame: HostFrame =
                    serde_json::from_slice(&self.buf[body]).map_err(|_| ChannelError::Malformed)?;
                match &frame {
                    HostFrame::Run(run) => {
                        self.peer_cpu = run.cpu;
                        self.running = !self.offline;
                    }
                    HostFrame::Reply { cpu, .. } => self.peer_cpu = *cpu,
                    HostFrame::ForbiddenSyscall => {}
                }
                self.start += protocol::HEADER + len;
                if self.start == self.buf.len() {
                    self.buf.clear();
                    self.start = 0;
                }
                Ok(Some(frame))
            }
            Split::TooLarge { .. } => Err(ChannelError::Malformed),
            Split::Incomplete => Ok(None),
        }
    }

    /// Enters or leaves offline mode, used by the worker's rehearsal before `Ready`: `frames`
    /// (already length-prefixed) are what [`Channel::recv`] will return, [`Channel::send`]
    /// discards its bytes, and `recv` never waits on the socket (with nothing buffered it reports
    /// the deadline as passed). Leaving drops whatever the rehearsal did not consume.
    pub(crate) fn set_offline(&mut self, offline: bool, frames: &[u8]) {
        self.buf.clear();
        self.start = 0;
        self.offline = offline;
        self.peer_cpu = None;
        self.running = false;
        if offline {
            self.buf.extend_from_slice(frames);
        }
    }

    /// Polls the socket until readable (`true`) or the deadline (`false`).
    ///
    /// A bridge reply usually arrives within tens of microseconds; sleeping in `poll` and being
    /// woken costs about as much again on a virtualized host. So the worker may first spin for a
    /// short, bounded time with zero-timeout polls (see [`Channel::set_spin`]), then blocks.
    fn wait_readable(&self, deadline: Option<Instant>) -> Result<bool, ChannelError> {
        use std::os::fd::AsRawFd;
        let Some(file) = &self.file else {
            return Err(ChannelError::Io);
        };
        let window = if self.running {
            self.spin.window(self.peer_cpu)
        } else {
            self.ready_spin
        };
        let spin_until = Instant::now() + window;
        loop {
            let mut pfd = libc::pollfd {
                fd: file.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd; a zero timeout never blocks.
            let rc = unsafe { libc::poll(&mut pfd, 1, 0) };
            if rc > 0 {
                return Ok(true);
            }
            if Instant::now() >= spin_until {
                break;
            }
            std::hint::spin_loop();
        }
        loop {
            let timeout_ms: libc::c_int = match deadline {
                None => -1,
                Some(at) => {
                    let left = at.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Ok(false);
                    }
                    // Round up so we never wake just before the deadline and spin.
                    libc::c_int::try_from(left.as_micros().div_ceil(1000))
                        .unwrap_or(libc::c_int::MAX)
                }
            };
            let mut pfd = libc::pollfd {
                fd: file.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            let rc = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
            if rc > 0 {
                return Ok(true);
            }
            if rc < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                return Err(ChannelError::Io);
            }
        }
    }
}

/// How long a worker spins for a bridge reply before sleeping in `poll`, unless configured.
pub(crate) const DEFAULT_SPIN_US: u32 = 150;
