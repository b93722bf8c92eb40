// AudioWorklet for phone.js: posts each 128-sample render quantum of the
// first input channel to the main thread (copied: the buffers are reused).
class Capture extends AudioWorkletProcessor {
  process(inputs) {
    const ch = inputs[0] && inputs[0][0];
    if (ch) this.port.postMessage(ch.slice(0));
    return true;
  }
}
registerProcessor('capture', Capture);
