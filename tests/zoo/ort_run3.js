// The round-3 corpus's ONNX Runtime runner (tests/zoo/build_zoo3.py): like
// ../shared/peer/ort_run.js, with the element types the round-3 cases feed
// and return (float16, int8, bool, ...), and the option of saving the model
// as ONNX Runtime optimised it.
// usage: node ort_run3.js MODEL INPUT_DIR OUT_DIR [--optimized PATH --level basic|extended|all]
// INPUT_DIR holds input_K.bin + input_K.json ({name, dtype, dims}); writes
// output_K.bin/.json in the session's output order.
const ort = require('onnxruntime-node');
const fs = require('fs'), path = require('path');
const [model, indir, outdir] = process.argv.slice(2, 5);
const opt = (k, d) => { const i = process.argv.indexOf(k); return i > 0 ? process.argv[i + 1] : d; };
const ctor = {
  float32: Float32Array, float64: Float64Array, float16: Uint16Array, int64: BigInt64Array,
  int32: Int32Array, int16: Int16Array, int8: Int8Array, uint8: Uint8Array, uint16: Uint16Array,
  bool: Uint8Array,
};
(async () => {
  const so = { executionProviders: ['cpu'], graphOptimizationLevel: opt('--level', 'all'),
               intraOpNumThreads: 1 };
  const optimized = opt('--optimized', '');
  if (optimized) so.optimizedModelFilePath = optimized;
  const s = await ort.InferenceSession.create(model, so);
  const feeds = {};
  for (let k = 0; fs.existsSync(path.join(indir, `input_${k}.json`)); k++) {
    const meta = JSON.parse(fs.readFileSync(path.join(indir, `input_${k}.json`)));
    const buf = fs.readFileSync(path.join(indir, `input_${k}.bin`));
    const C = ctor[meta.dtype];
    if (!C) throw new Error(`input ${meta.name}: element type ${meta.dtype} not handled`);
    const arr = new C(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
    feeds[meta.name] = new ort.Tensor(meta.dtype, arr, meta.dims);
  }
  const out = await s.run(feeds);
  fs.mkdirSync(outdir, { recursive: true });
  s.outputNames.forEach((n, k) => {
    const t = out[n];
    let d = t.data;
    if (typeof d.buffer === 'undefined') throw new Error(`output ${n}: type ${t.type} not handled`);
    fs.writeFileSync(path.join(outdir, `output_${k}.bin`), Buffer.from(d.buffer, d.byteOffset, d.byteLength));
    fs.writeFileSync(path.join(outdir, `output_${k}.json`), JSON.stringify({ name: n, dtype: t.type, dims: t.dims }));
  });
})().catch(e => { console.error('Error: ' + (e && e.message ? e.message : e)); process.exit(1); });
