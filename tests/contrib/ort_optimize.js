// Saves ONNX Runtime's optimized graph of a model and its outputs on given inputs.
// usage: node ort_optimize.js MODEL LEVEL OUT_MODEL [INPUT_DIR OUT_DIR]
//   LEVEL: basic | extended | all (ORT's graphOptimizationLevel). The optimized graph is written
//   by ORT itself (session option optimizedModelFilePath). With INPUT_DIR (input_K.bin + .json,
//   as pb2raw.py writes them) the optimized model is then run, without further optimization,
//   and its outputs are written as output_K.bin + output_K.json into OUT_DIR.
const ort = require(process.env.ORT_NODE || 'onnxruntime-node');
const fs = require('fs'), path = require('path');
const [model, level, outModel, indir, outdir] = process.argv.slice(2, 7);
const ctor = { float32: Float32Array, int64: BigInt64Array, int32: Int32Array, uint8: Uint8Array };
(async () => {
  await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'], graphOptimizationLevel: level, optimizedModelFilePath: outModel,
    intraOpNumThreads: 1 });
  if (!indir) return;
  const s = await ort.InferenceSession.create(outModel, {
    executionProviders: ['cpu'], graphOptimizationLevel: 'disabled', intraOpNumThreads: 1 });
  const feeds = {};
  for (let k = 0; fs.existsSync(path.join(indir, `input_${k}.json`)); k++) {
    const meta = JSON.parse(fs.readFileSync(path.join(indir, `input_${k}.json`)));
    const buf = fs.readFileSync(path.join(indir, `input_${k}.bin`));
    const C = ctor[meta.dtype];
    const arr = new C(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
    feeds[meta.name] = new ort.Tensor(meta.dtype, arr, meta.dims);
  }
  const out = await s.run(feeds);
  fs.mkdirSync(outdir, { recursive: true });
  s.outputNames.forEach((n, k) => {
    const t = out[n];
    fs.writeFileSync(path.join(outdir, `output_${k}.bin`), Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    fs.writeFileSync(path.join(outdir, `output_${k}.json`), JSON.stringify({ name: n, dtype: t.type, dims: t.dims }));
  });
})().catch(e => { console.error(e); process.exit(1); });
