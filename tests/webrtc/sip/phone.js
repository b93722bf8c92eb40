// A JsSIP softphone for the SIP-over-WebSocket rig, driven by Playwright's
// page.evaluate() through window.phone:
//
//   await phone.register(wsUrl, aor)     -> true once registered
//   phone.call(uri)                      -> starts a call (promise: confirmed)
//   phone.hangup(), phone.hold(), phone.unhold()
//   await phone.measure(freq, ms)        -> {share, rms, samples}: the remote
//                                           audio's share of energy at freq
//   await phone.stats()                  -> inbound/outbound RTP counters,
//                                           ICE pair and DTLS state
//   phone.state()                        -> registration, call state, events
//
// Incoming calls are answered at once (audio only). The microphone is
// whatever getUserMedia gives: in the rig, chromium's fake capture device
// playing a WAV tone (--use-file-for-fake-audio-capture).
(function () {
  'use strict';

  const st = {
    registered: false,
    regError: null,
    call: 'idle',          // idle | calling | incoming | confirmed | ended | failed
    cause: null,
    direction: null,       // outgoing | incoming
    held: false,
    remoteHeld: false,
    calls: 0,
    events: [],
  };
  let ua = null;
  let session = null;
  let audioCtx = null;
  let capture = null;       // {node, chunks, source, stream}
  const audioEl = document.getElementById('remote');

  function log(what) {
    st.events.push(((performance.now() / 1000).toFixed(2)) + ' ' + what);
    if (st.events.length > 200) st.events.shift();
    const pre = document.getElementById('log');
    if (pre) pre.textContent = st.events.join('\n');
  }

  function remoteStream() {
    const pc = session && session.connection;
    if (!pc) return null;
    const tracks = pc.getReceivers().map((r) => r.track).filter((t) => t && t.kind === 'audio');
    return tracks.length ? new MediaStream(tracks) : null;
  }

  // Plays the remote audio in a muted <audio> element (without a sink,
  // chromium feeds silence from a remote WebRTC track to WebAudio) and taps it
  // with an AudioWorklet that hands the samples to measure().
  async function attachRemote() {
    const stream = remoteStream();
    if (!stream) { log('no remote track'); return; }
    audioEl.srcObject = stream;
    audioEl.muted = true;
    try { await audioEl.play(); } catch (e) { log('audio.play: ' + e); }
    if (!audioCtx) {
      audioCtx = new AudioContext();
      await audioCtx.audioWorklet.addModule('capture-worklet.js');
    }
    if (audioCtx.state !== 'running') await audioCtx.resume();
    if (capture) { try { capture.source.disconnect(); capture.node.disconnect(); } catch (e) {} }
    const source = audioCtx.createMediaStreamSource(stream);
    const node = new AudioWorkletNode(audioCtx, 'capture');
    const sink = audioCtx.createGain();
    sink.gain.value = 0;
    capture = { node, source, stream, chunks: null };
    node.port.onmessage = (ev) => { if (capture.chunks) capture.chunks.push(ev.data); };
    source.connect(node);
    node.connect(sink);
    sink.connect(audioCtx.destination);
    log('remote audio attached at ' + audioCtx.sampleRate + ' Hz');
  }

  function watch(s) {
    session = s;
    st.calls += 1;
    st.held = false;
    st.remoteHeld = false;
    st.cause = null;
    s.on('progress', () => log('progress'));
    s.on('accepted', () => log('accepted'));
    s.on('confirmed', () => {
      st.call = 'confirmed';
      log('confirmed');
      attachRemote().catch((e) => log('attach: ' + e));
    });
    s.on('ended', (e) => { st.call = 'ended'; st.cause = e.cause; log('ended: ' + e.cause); });
    s.on('failed', (e) => { st.call = 'failed'; st.cause = e.cause; log('failed: ' + e.cause); });
    s.on('hold', (e) => { if (e.originator === 'remote') st.remoteHeld = true; log('hold ' + e.originator); });
    s.on('unhold', (e) => { if (e.originator === 'remote') st.remoteHeld = false; log('unhold ' + e.originator); });
    s.on('reinvite', () => log('re-INVITE received'));
    s.on('sdp', (e) => { log('sdp ' + e.originator + ' ' + e.type); (st.sdp = st.sdp || []).push({ originator: e.originator, type: e.type, sdp: e.sdp }); });
    s.on('peerconnection', (e) => {
      e.peerconnection.addEventListener('track', () => {
        if (st.call === 'confirmed') attachRemote().catch((err) => log('attach: ' + err));
      });
    });
  }

  const options = () => ({
    mediaConstraints: { audio: true, video: false },
    pcConfig: { iceServers: [] },
    sessionTimersExpires: 1800,
  });

  window.phone = {
    register(wsUrl, aor, timeoutMs) {
      return new Promise((resolve, reject) => {
        const socket = new JsSIP.WebSocketInterface(wsUrl);
        ua = new JsSIP.UA({
          sockets: [socket],
          uri: aor,
          register: true,
          register_expires: 600,
          session_timers: false,
          connection_recovery_min_interval: 1,
          connection_recovery_max_interval: 2,
          user_agent: 'JsSIP ' + JsSIP.version + ' srtpgate-webrtc-rig',
        });
        const timer = setTimeout(() => reject(new Error('no registration in ' + (timeoutMs || 8000) + ' ms')),
                                 timeoutMs || 8000);
        ua.on('connected', () => log('ws connected'));
        ua.on('disconnected', () => log('ws disconnected'));
        ua.on('registered', () => { st.registered = true; log('registered'); clearTimeout(timer); resolve(true); });
        ua.on('registrationFailed', (e) => {
          st.regError = e.cause; log('registration failed: ' + e.cause);
          clearTimeout(timer); reject(new Error('registration failed: ' + e.cause));
        });
        ua.on('newRTCSession', (e) => {
          if (e.originator === 'remote') {
            st.direction = 'incoming';
            st.call = 'incoming';
            watch(e.session);
            log('incoming call from ' + e.request.from.uri.toString() + ': answering');
            e.session.answer(options());
          }
        });
        ua.start();
      });
    },

    call(uri) {
      st.direction = 'outgoing';
      st.call = 'calling';
      const s = ua.call(uri, options());
      watch(s);
      return true;
    },

    hangup() {
      if (session && !session.isEnded()) session.terminate();
      return true;
    },

    hold() {
      return new Promise((resolve, reject) => {
        if (!session) return reject(new Error('no call'));
        st.held = true;
        const ok = session.hold({}, () => { log('hold done'); resolve(true); });
        if (!ok) reject(new Error('hold refused in state ' + st.call));
      });
    },

    unhold() {
      return new Promise((resolve, reject) => {
        if (!session) return reject(new Error('no call'));
        st.held = false;
        const ok = session.unhold({}, () => { log('unhold done'); resolve(true); });
        if (!ok) reject(new Error('unhold refused in state ' + st.call));
      });
    },

    // Energy share of `freq` in the next `ms` of received audio: Goertzel over
    // blocks of 2048 samples, the blocks' tone power summed over their energy.
    async measure(freq, ms) {
      if (!capture) return { share: 0, rms: 0, samples: 0, note: 'no remote audio attached' };
      capture.chunks = [];
      await new Promise((r) => setTimeout(r, ms));
      const chunks = capture.chunks;
      capture.chunks = null;
      const rate = audioCtx.sampleRate;
      let n = 0;
      for (const c of chunks) n += c.length;
      const x = new Float32Array(n);
      let off = 0;
      for (const c of chunks) { x.set(c, off); off += c.length; }
      const w = 2 * Math.PI * freq / rate;
      const coeff = 2 * Math.cos(w);
      const B = 2048;
      let tone = 0;
      let energy = 0;
      for (let b = 0; b + B <= n; b += B) {
        let s1 = 0, s2 = 0, e = 0;
        for (let i = b; i < b + B; i++) {
          const v = x[i];
          const s0 = v + coeff * s1 - s2;
          s2 = s1; s1 = s0;
          e += v * v;
        }
        tone += 2 * (s1 * s1 + s2 * s2 - coeff * s1 * s2) / B;
        energy += e;
      }
      return {
        share: energy > 0 ? tone / energy : 0,
        rms: n ? Math.sqrt(energy / n) : 0,
        samples: n,
        rate,
      };
    },

    async stats() {
      const pc = session && session.connection;
      const out = { inbound: null, outbound: null, pair: null, dtls: null, codec: null };
      if (!pc) return out;
      const report = await pc.getStats();
      report.forEach((r) => {
        if (r.type === 'inbound-rtp' && r.kind === 'audio') {
          out.inbound = { packetsReceived: r.packetsReceived, bytesReceived: r.bytesReceived,
                          packetsLost: r.packetsLost, codecId: r.codecId };
        } else if (r.type === 'outbound-rtp' && r.kind === 'audio') {
          out.outbound = { packetsSent: r.packetsSent, bytesSent: r.bytesSent };
        } else if (r.type === 'transport') {
          out.dtls = r.dtlsState;
          out.srtpCipher = r.srtpCipher;
          out.selectedPair = r.selectedCandidatePairId;
        }
      });
      if (out.inbound && out.inbound.codecId) {
        const c = report.get(out.inbound.codecId);
        out.codec = c ? c.mimeType + '/' + c.clockRate : null;
      }
      if (out.selectedPair) {
        const p = report.get(out.selectedPair);
        if (p) {
          const l = report.get(p.localCandidateId), rm = report.get(p.remoteCandidateId);
          out.pair = { state: p.state,
                       local: l && (l.address + ':' + l.port + ' ' + l.candidateType),
                       remote: rm && (rm.address + ':' + rm.port + ' ' + rm.candidateType) };
        }
      }
      out.iceState = pc.iceConnectionState;
      out.connectionState = pc.connectionState;
      return out;
    },

    state() {
      return Object.assign({}, st, { sdp: undefined, events: st.events.slice(-40) });
    },

    sdps() { return st.sdp || []; },
  };
  log('JsSIP ' + JsSIP.version + ' loaded');
})();
