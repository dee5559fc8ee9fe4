//! The encoder's arithmetic on plain row-major f32 buffers: a linear layer packed once for the
//! product `x · W + b`, layer norm, softmax and dot products over rows.
//!
//! Owns: the packed weight layout — output columns in panels of [`PANEL`], each panel's rows
//! contiguous, so a product streams the weights in memory order once per block of rows and
//! keeps a block's sums (up to [`BLOCK`] rows × [`PANEL`] columns) in registers, with no
//! repacking per call — and the choice, once per forward pass, of the AVX2+FMA build of these
//! loops on x86-64 CPUs that have it ([`Simd::detect`]; the portable build otherwise, and on
//! aarch64, whose baseline has fused multiply-add).
//!
//! Also owns the query pool ([`query_pool`]): the threads a query's split products and
//! cosine scan run on, apart from the global pool where batches of tool texts run, so a query
//! never waits in line behind a batch.
//!
//! Never does: spawn threads per product (a split product runs on the pool it is called in),
//! or know what a token or a head is.

/// Output columns per packed panel: two AVX2 registers of f32.
pub const PANEL: usize = 16;
/// Rows whose sums a product keeps in registers at once (6 × 16 f32 = 12 AVX2 registers).
pub const BLOCK: usize = 6;
/// Rows of `x` per pass over all of a layer's panels: a chunk of the input stays in L2 while
/// every panel streams past it.
const CHUNK: usize = 8 * BLOCK;
/// Multiply-adds from which a product is worth splitting over two threads (a 7-token query's
/// smallest product is about a million).
const SPLIT_WORK: usize = 1 << 20;
/// Panels per pass over a chunk's blocks: a multiple of every [`panels_per_block`].
const GROUP: usize = 6;

/// The pool a query's work runs on (as many threads as rayon's global pool: the cores, or
/// `RAYON_NUM_THREADS`), built on first use; `None` if its threads could not be started (the
/// query then runs on the calling thread, unsplit).
pub fn query_pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(rayon::current_num_threads())
            .thread_name(|i| format!("toolsearch-query-{i}"))
            .build()
            .map_err(|error| tracing::warn!(%error, "no query threads: queries run unsplit"))
            .ok()
    })
    .as_ref()
}

/// Which build of the loops runs: chosen at run time from what the CPU has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Simd {
    /// x86-64 with AVX2 and FMA.
    Avx2Fma,
    /// Whatever the compilation target guarantees.
    Portable,
}

impl Simd {
    /// The fastest build this CPU can run.
    pub fn detect() -> Simd {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return Simd::Avx2Fma;
        }
        Simd::Portable
    }
}

/// `a · b + c`, fused where `FMA` says the build has the instruction (as one rounding), else
/// as a multiply and an add (a fused multiply-add without the instruction is a slow libm call).
#[inline(always)]
pub fn madd<const FMA: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FMA { a.mul_add(b, c) } else { a * b + c }
}

/// Whether the portable build may fuse: aarch64's baseline has the instruction.
pub const PORTABLE_FMA: bool = cfg!(target_arch = "aarch64");

/// A linear layer `y = x · W + b`, its weights packed into panels.
pub struct Linear {
    inputs: usize,
    outputs: usize,
    /// `panels × inputs × PANEL`: panel `p`, row `k`, column `j` is `W[k, p·PANEL + j]`
    /// (zero past the last output).
    panels: Vec<f32>,
    /// `panels × PANEL`, zero past the last output.
    bias: Vec<f32>,
}

impl std::fmt::Debug for Linear {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Linear")
            .field("inputs", &self.inputs)
            .field("outputs", &self.outputs)
            .finish()
    }
}

impl Linear {
    /// The layer from PyTorch's layout: `weight` is `[outputs, inputs]` row-major, `bias`
    /// `[outputs]`. Lengths that do not match are an error naming them.
    pub fn new(
        weight: &[f32],
        bias: &[f32],
        outputs: usize,
        inputs: usize,
    ) -> Result<Self, String> {
        if weight.len() != outputs * inputs || bias.len() != outputs {
            return Err(format!(
                "a {outputs}×{inputs} layer needs {} weights and {outputs} biases, got {} and {}",
                outputs * inputs,
                weight.len(),
                bias.len()
            ));
        }
        let count = outputs.div_ceil(PANEL);
        let mut panels = vec![0.0; count * inputs * PANEL];
        for (o, row) in weight.chunks_exact(inputs.max(1)).enumerate() {
            let (p, j) = (o / PANEL, o % PANEL);
            let panel = &mut panels[p * inputs * PANEL..(p + 1) * inputs * PANEL];
            for (k, &w) in row.iter().enumerate() {
                panel[k * PANEL + j] = w;
            }
        }
        let mut padded_bias = vec![0.0; count * PANEL];
        padded_bias[..outputs].copy_from_slice(bias);
        Ok(Linear {
            inputs,
            outputs,
            panels,
            bias: padded_bias,
        })
    }

    /// Several `[outputs, inputs]` layers over the same input as one (their outputs side by
    /// side, in order): one pass over `x` instead of one each.
    pub fn fused(
        parts: &[(&[f32], &[f32])],
        outputs: usize,
        inputs: usize,
    ) -> Result<Self, String> {
        let mut weight = Vec::with_capacity(parts.len() * outputs * inputs);
        let mut bias = Vec::with_capacity(parts.len() * outputs);
        for (w, b) in parts {
            if w.len() != outputs * inputs || b.len() != outputs {
                return Err(format!(
                    "a {outputs}×{inputs} layer needs {} weights and {outputs} biases, got {} and {}",
                    outputs * inputs,
                    w.len(),
                    b.len()
                ));
            }
            weight.extend_from_slice(w);
            bias.extend_from_slice(b);
        }
        Linear::new(&weight, &bias, parts.len() * outputs, inputs)
    }

    /// Width of each output row.
    pub fn outputs(&self) -> usize {
        self.outputs
    }

    /// `out = x · W + b` for every row of `x` (`rows × inputs`) into `out` (`rows × outputs`).
    /// With `split`, a product worth it is computed in two halves of the output columns on
    /// the rayon pool the caller runs in (each half streams half the weights: a few tokens'
    /// products are bound by memory bandwidth, which each core brings its own of).
    ///
    /// # Panics
    /// If the buffers' lengths are not whole rows of the same count (a caller's bug).
    ///
    /// # Safety
    /// On x86-64, `FMA` runs the AVX2+FMA kernel: the CPU must have both
    /// ([`Simd::detect`] said [`Simd::Avx2Fma`]).
    #[inline(always)]
    pub unsafe fn apply<const FMA: bool>(&self, x: &[f32], out: &mut [f32], split: bool) {
        let (inputs, outputs) = (self.inputs, self.outputs);
        if inputs == 0 || outputs == 0 {
            return;
        }
        let rows = x.len() / inputs;
        assert!(
            x.len() == rows * inputs && out.len() == rows * outputs,
            "linear layer {inputs}→{outputs}: {} inputs and {} outputs are not {rows} rows",
            x.len(),
            out.len()
        );
        let count = self.panels.len() / (inputs * PANEL);
        if split
            && count >= 2 * GROUP
            && rows * inputs * outputs >= SPLIT_WORK
            && rayon::current_num_threads() > 1
        {
            // Halves on a whole number of groups, so each keeps its wide blocks.
            let half = (count / 2).div_ceil(GROUP) * GROUP;
            let left_width = half * PANEL;
            let right_width = outputs - left_width;
            let mut left = vec![0.0; rows * left_width];
            let mut right = vec![0.0; rows * right_width];
            rayon::join(
                // SAFETY: the caller's promise holds on every thread of this CPU.
                || unsafe { self.panels_into::<FMA>(x, &mut left, 0, half) },
                // SAFETY: as above.
                || unsafe { self.panels_into::<FMA>(x, &mut right, half, count) },
            );
            for ((row, l), r) in out
                .chunks_exact_mut(outputs)
                .zip(left.chunks_exact(left_width))
                .zip(right.chunks_exact(right_width))
            {
                row[..left_width].copy_from_slice(l);
                row[left_width..].copy_from_slice(r);
            }
        } else {
            // SAFETY: as this function's.
            unsafe { self.panels_into::<FMA>(x, out, 0, count) }
        }
    }

    /// Panels `first..end` of the product into `out`, whose rows hold exactly those panels'
    /// columns.
    ///
    /// # Safety
    /// As [`Linear::apply`]'s.
    #[inline(always)]
    unsafe fn panels_into<const FMA: bool>(
        &self,
        x: &[f32],
        out: &mut [f32],
        first: usize,
        end: usize,
    ) {
        let (inputs, outputs) = (self.inputs, self.outputs);
        let stride = (end * PANEL).min(outputs) - first * PANEL;
        // Whether short blocks take several panels at once (the AVX2 kernel).
        let wide_blocks = FMA && cfg!(target_arch = "x86_64");
        for (x_chunk, out_chunk) in x.chunks(CHUNK * inputs).zip(out.chunks_mut(CHUNK * stride)) {
            for group in (first..end).step_by(GROUP) {
                let group_end = end.min(group + GROUP);
                // Blocks of four rows or more, one panel at a time: the panel stays in cache for
                // every block of the chunk.
                for p in group..group_end {
                    for (x_block, out_block) in x_chunk
                        .chunks(BLOCK * inputs)
                        .zip(out_chunk.chunks_mut(BLOCK * stride))
                        .filter(|(x_block, _)| !(wide_blocks && x_block.len() / inputs < 4))
                    {
                        // SAFETY: as this function's.
                        unsafe { self.block::<FMA>(x_block, out_block, p, 1, first, stride) };
                    }
                }
                // A short last block, several panels at a time.
                for (x_block, out_block) in x_chunk
                    .chunks(BLOCK * inputs)
                    .zip(out_chunk.chunks_mut(BLOCK * stride))
                    .filter(|(x_block, _)| wide_blocks && x_block.len() / inputs < 4)
                {
                    let wide = panels_per_block(x_block.len() / inputs);
                    let mut p = group;
                    while p < group_end {
                        let step = if p + wide <= group_end { wide } else { 1 };
                        // SAFETY: as this function's.
                        unsafe { self.block::<FMA>(x_block, out_block, p, step, first, stride) };
                        p += step;
                    }
                }
            }
        }
    }

    /// One block of rows times panels `p..p + step` into `out`, whose rows hold the columns
    /// of panels `first..` (`stride` wide).
    ///
    /// # Safety
    /// As [`Linear::apply`]'s.
    #[inline(always)]
    unsafe fn block<const FMA: bool>(
        &self,
        x: &[f32],
        out: &mut [f32],
        p: usize,
        step: usize,
        first: usize,
        stride: usize,
    ) {
        let (inputs, outputs) = (self.inputs, self.outputs);
        let rows = x.len() / inputs;
        let panel_len = inputs * PANEL;
        let col = p * PANEL;
        let span = Span {
            inputs,
            outputs: stride,
            col: col - first * PANEL,
            width: (step * PANEL).min(outputs - col),
        };
        let panels = &self.panels[p * panel_len..(p + step) * panel_len];
        let bias = &self.bias[col..col + step * PANEL];
        #[cfg(target_arch = "x86_64")]
        if FMA {
            // SAFETY: the caller promises AVX2 and FMA; `block` checks the buffers' lengths
            // before reading them.
            unsafe {
                match (rows, step) {
                    (6, _) => avx2::block::<6, 1>(x, panels, bias, out, span),
                    (5, _) => avx2::block::<5, 1>(x, panels, bias, out, span),
                    (4, _) => avx2::block::<4, 1>(x, panels, bias, out, span),
                    (3, 2) => avx2::block::<3, 2>(x, panels, bias, out, span),
                    (3, _) => avx2::block::<3, 1>(x, panels, bias, out, span),
                    (2, 3) => avx2::block::<2, 3>(x, panels, bias, out, span),
                    (2, _) => avx2::block::<2, 1>(x, panels, bias, out, span),
                    (_, 6) => avx2::block::<1, 6>(x, panels, bias, out, span),
                    _ => avx2::block::<1, 1>(x, panels, bias, out, span),
                }
            }
            return;
        }
        let bias: &[f32; PANEL] = bias.try_into().unwrap_or(&[0.0; PANEL]);
        match rows {
            6 => block::<6, FMA>(x, panels, bias, out, span),
            5 => block::<5, FMA>(x, panels, bias, out, span),
            4 => block::<4, FMA>(x, panels, bias, out, span),
            3 => block::<3, FMA>(x, panels, bias, out, span),
            2 => block::<2, FMA>(x, panels, bias, out, span),
            _ => block::<1, FMA>(x, panels, bias, out, span),
        }
    }
}

/// Panels a block of `rows` rows takes at once in the AVX2 kernel: enough that the block keeps
/// 12 independent sums in flight (fewer leave the multiply-add units waiting on their own
/// latency: one row against one panel is two dependent chains).
fn panels_per_block(rows: usize) -> usize {
    match rows {
        1 => 6,
        2 => 3,
        3 => 2,
        _ => 1,
    }
}

/// Where a block's sums go: the layer's widths and the panel's first column and live width.
#[derive(Clone, Copy)]
struct Span {
    inputs: usize,
    outputs: usize,
    col: usize,
    width: usize,
}

/// `R` rows of `x` times one panel, plus the bias, into those rows' `width` columns at `col`.
#[inline(always)]
fn block<const R: usize, const FMA: bool>(
    x: &[f32],
    panel: &[f32],
    bias: &[f32; PANEL],
    out: &mut [f32],
    span: Span,
) {
    let inputs = span.inputs;
    let rows: [&[f32]; R] = std::array::from_fn(|r| &x[r * inputs..(r + 1) * inputs]);
    let mut sums = [*bias; R];
    for (k, weights) in panel.chunks_exact(PANEL).enumerate().take(inputs) {
        let weights: &[f32; PANEL] = weights.try_into().unwrap_or(&[0.0; PANEL]);
        for (sum, row) in sums.iter_mut().zip(&rows) {
            let value = row[k];
            for (s, w) in sum.iter_mut().zip(weights) {
                *s = madd::<FMA>(value, *w, *s);
            }
        }
    }
    for (r, sum) in sums.iter().enumerate() {
        let at = r * span.outputs + span.col;
        out[at..at + span.width].copy_from_slice(&sum[..span.width]);
    }
}

/// The product's inner block with AVX2 intrinsics: each row's 16 sums per panel in two
/// registers, each panel's two registers per input loaded once for all `R` rows.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::{
        __m256, _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_set1_ps, _mm256_setzero_ps,
        _mm256_storeu_ps,
    };

    use super::{PANEL, Span};

    /// `R` rows of `x` times `P` consecutive panels, plus the bias, into those rows' `width`
    /// columns at `col`.
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn block<const R: usize, const P: usize>(
        x: &[f32],
        panels: &[f32],
        bias: &[f32],
        out: &mut [f32],
        span: Span,
    ) {
        let Span {
            inputs,
            outputs,
            col,
            width,
        } = span;
        let panel_len = inputs * PANEL;
        assert!(
            x.len() >= R * inputs
                && panels.len() >= P * panel_len
                && bias.len() >= P * PANEL
                && width <= P * PANEL
                && col + width <= outputs
                && out.len() >= (R - 1) * outputs + col + width,
            "a product block's buffers are too short"
        );
        let (x, panels) = (x.as_ptr(), panels.as_ptr());
        let zero = _mm256_setzero_ps();
        let mut sums: [[[__m256; 2]; P]; R] = [[[zero; 2]; P]; R];
        for (q, pair) in sums[0].iter_mut().enumerate() {
            // SAFETY: 16 floats of `bias` per panel, checked above.
            unsafe {
                pair[0] = _mm256_loadu_ps(bias.as_ptr().add(q * PANEL));
                pair[1] = _mm256_loadu_ps(bias.as_ptr().add(q * PANEL + 8));
            }
        }
        for r in 1..R {
            sums[r] = sums[0];
        }
        for k in 0..inputs {
            let mut weights = [[zero; 2]; P];
            for (q, pair) in weights.iter_mut().enumerate() {
                // SAFETY: `q < P` and `k < inputs`: inside the `P × inputs × PANEL` floats.
                unsafe {
                    let w = panels.add(q * panel_len + k * PANEL);
                    pair[0] = _mm256_loadu_ps(w);
                    pair[1] = _mm256_loadu_ps(w.add(8));
                }
            }
            for (r, row) in sums.iter_mut().enumerate() {
                // SAFETY: `r < R` and `k < inputs`: inside `x`'s `R × inputs` floats.
                let v = _mm256_set1_ps(unsafe { *x.add(r * inputs + k) });
                for (sum, w) in row.iter_mut().zip(&weights) {
                    sum[0] = _mm256_fmadd_ps(v, w[0], sum[0]);
                    sum[1] = _mm256_fmadd_ps(v, w[1], sum[1]);
                }
            }
        }
        for (r, row) in sums.iter().enumerate() {
            let mut flat = [0.0f32; 6 * PANEL];
            for (q, pair) in row.iter().enumerate() {
                // SAFETY: `flat` holds 16 floats per panel, `P ≤ 6`.
                unsafe {
                    _mm256_storeu_ps(flat.as_mut_ptr().add(q * PANEL), pair[0]);
                    _mm256_storeu_ps(flat.as_mut_ptr().add(q * PANEL + 8), pair[1]);
                }
            }
            let at = r * outputs + col;
            out[at..at + width].copy_from_slice(&flat[..width]);
        }
    }
}

/// The dot product of two slices (over the shorter's length), summed in `LANES` independent
/// lanes, which the compiler keeps in vector registers: one running sum is a chain of dependent
/// additions that cannot be vectorised (floating-point addition is not associative).
#[inline(always)]
pub fn dot<const FMA: bool, const LANES: usize>(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut lanes = [0.0f32; LANES];
    let (a_chunks, b_chunks) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: f32 = a_chunks
        .remainder()
        .iter()
        .zip(b_chunks.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a_chunks.zip(b_chunks) {
        for ((lane, x), y) in lanes.iter_mut().zip(x).zip(y) {
            *lane = madd::<FMA>(*x, *y, *lane);
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// `out += scale · v`.
#[inline(always)]
pub fn axpy<const FMA: bool>(scale: f32, v: &[f32], out: &mut [f32]) {
    for (o, v) in out.iter_mut().zip(v) {
        *o = madd::<FMA>(scale, *v, *o);
    }
}

/// Each row of `x` (rows of `gamma.len()`) normalised to mean 0 and variance 1, then scaled by
/// `gamma` and shifted by `beta`, in place.
#[inline(always)]
pub fn layer_norm<const FMA: bool>(x: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let width = gamma.len();
    if width == 0 {
        return;
    }
    for row in x.chunks_exact_mut(width) {
        let mean = sum(row) / width as f32;
        let mut lanes = [0.0f32; 8];
        let chunks = row.chunks_exact(8);
        let tail: f32 = chunks
            .remainder()
            .iter()
            .map(|v| (v - mean) * (v - mean))
            .sum();
        for chunk in chunks {
            for (lane, v) in lanes.iter_mut().zip(chunk) {
                let d = v - mean;
                *lane = madd::<FMA>(d, d, *lane);
            }
        }
        let variance = (lanes.iter().sum::<f32>() + tail) / width as f32;
        let inverse = 1.0 / (variance + eps).sqrt();
        for ((v, g), b) in row.iter_mut().zip(gamma).zip(beta) {
            *v = madd::<FMA>((*v - mean) * inverse, *g, *b);
        }
    }
}

/// The sum of `values` in 8 lanes.
#[inline(always)]
fn sum(values: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 8];
    let chunks = values.chunks_exact(8);
    let tail: f32 = chunks.remainder().iter().sum();
    for chunk in chunks {
        for (lane, v) in lanes.iter_mut().zip(chunk) {
            *lane += v;
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// `values` replaced by their softmax.
#[inline(always)]
pub fn softmax(values: &mut [f32]) {
    let top = values.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut total = 0.0;
    for v in values.iter_mut() {
        *v = (*v - top).exp();
        total += *v;
    }
    let inverse = 1.0 / total;
    values.iter_mut().for_each(|v| *v *= inverse);
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Every block height, several panels per block, groups of panels with a remainder and a
    /// ragged last panel, against the plain triple loop.
    #[test]
    fn a_packed_product_equals_the_plain_one_for_every_shape() {
        let mut seed = 7u32;
        let mut next = || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        };
        for (rows, inputs, outputs) in [
            (1, 5, 3),
            (7, 9, 17),
            (13, 33, 40),
            (50, 16, 16),
            (2, 20, 96),
            (3, 7, 200),
            (8, 24, 100),
            (1, 64, 1152),
            (57, 10, 33),
            (40, 200, 392),
        ] {
            let x: Vec<f32> = (0..rows * inputs).map(|_| next()).collect();
            let w: Vec<f32> = (0..outputs * inputs).map(|_| next()).collect();
            let b: Vec<f32> = (0..outputs).map(|_| next()).collect();
            let layer = Linear::new(&w, &b, outputs, inputs).unwrap();
            let mut want = vec![0.0f32; rows * outputs];
            for r in 0..rows {
                for o in 0..outputs {
                    want[r * outputs + o] = b[o]
                        + (0..inputs)
                            .map(|k| x[r * inputs + k] * w[o * inputs + k])
                            .sum::<f32>();
                }
            }
            for (simd, split) in [
                (Simd::Portable, false),
                (Simd::Portable, true),
                (Simd::detect(), false),
                (Simd::detect(), true),
            ] {
                let mut got = vec![f32::NAN; rows * outputs];
                match simd {
                    // SAFETY: `detect` found AVX2 and FMA.
                    Simd::Avx2Fma => unsafe { apply_avx2_fma(&layer, &x, &mut got, split) },
                    // SAFETY: the portable build needs nothing of the CPU.
                    Simd::Portable => unsafe { layer.apply::<PORTABLE_FMA>(&x, &mut got, split) },
                }
                for (g, w) in got.iter().zip(&want) {
                    assert!(
                        (g - w).abs() < 1e-5,
                        "{rows}×{inputs}×{outputs}: {g} vs {w}"
                    );
                }
            }
        }
    }

    /// # Safety
    /// The CPU must have AVX2 and FMA.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn apply_avx2_fma(layer: &Linear, x: &[f32], out: &mut [f32], split: bool) {
        // SAFETY: as this function's.
        unsafe { layer.apply::<true>(x, out, split) }
    }

    /// The portable build, on CPUs without AVX2.
    #[cfg(not(target_arch = "x86_64"))]
    unsafe fn apply_avx2_fma(layer: &Linear, x: &[f32], out: &mut [f32], split: bool) {
        // SAFETY: the portable build needs nothing of the CPU.
        unsafe { layer.apply::<PORTABLE_FMA>(x, out, split) }
    }

    #[test]
    fn mismatched_weights_are_an_error_not_a_panic() {
        let error = Linear::new(&[0.0; 5], &[0.0; 2], 2, 3).unwrap_err();
        assert!(error.contains("needs 6 weights"), "{error}");
    }
}
