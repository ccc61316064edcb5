import { describe, expect, it } from 'vitest';
import { GPU_FLAGS, adapterLabel, chromiumLaunch, findChromium } from './chromium-launch.ts';
import type { AdapterSummary } from '../src/gpu/gpu.ts';

const NVIDIA_ICD = '/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json';
const probe = (icds: string[], files: string[] = ['/usr/bin/chromium'], devices: string[] = ['/dev/nvidia0']) => ({
  hardwareIcds: () => icds,
  gpuDevices: () => devices,
  exists: (p: string) => files.includes(p),
});
const ENV_SH_FLAGS =
  '--no-sandbox --disable-dev-shm-usage --enable-unsafe-webgpu --enable-features=Vulkan --use-angle=vulkan --disable-vulkan-surface --enable-webgpu-developer-features';

describe('chromiumLaunch: the flags', () => {
  it('SwiftShader flags where there is no hardware Vulkan driver', () => {
    const l = chromiumLaunch({}, probe([]));
    expect(l.gpuFlags).toBe(false);
    expect(l.args).toContain('--enable-unsafe-webgpu');
    expect(l.args).not.toContain('--use-angle=vulkan');
    expect(l.args).not.toContain('--disable-vulkan-surface');
  });

  it('GPU flags where the NVIDIA Vulkan driver is installed', () => {
    const l = chromiumLaunch({}, probe([NVIDIA_ICD]));
    expect(l.gpuFlags).toBe(true);
    expect(l.reason).toContain(NVIDIA_ICD);
    for (const f of GPU_FLAGS) expect(l.args).toContain(f);
  });

  it("SwiftShader flags where driver manifests are installed but no GPU device exists (apt's Mesa on a CPU machine)", () => {
    const mesa = ['/usr/share/vulkan/icd.d/intel_icd.x86_64.json', '/usr/share/vulkan/icd.d/radeon_icd.x86_64.json'];
    const l = chromiumLaunch({}, probe(mesa, ['/usr/bin/chromium'], []));
    expect(l.gpuFlags).toBe(false);
    expect(l.reason).toContain('no GPU device node');
    expect(l.args).not.toContain('--use-angle=vulkan');
    expect(chromiumLaunch({}, probe(mesa, ['/usr/bin/chromium'], ['/dev/dri/renderD128'])).gpuFlags).toBe(true);
  });

  it("the device pack's CHROME_GPU_FLAGS, as they are, even before the driver is seen", () => {
    const l = chromiumLaunch({ CHROME_GPU_FLAGS: ENV_SH_FLAGS }, probe([]));
    expect(l.gpuFlags).toBe(true);
    for (const f of ENV_SH_FLAGS.split(' ')) expect(l.args).toContain(f);
    expect(new Set(l.args).size).toBe(l.args.length); // no flag twice
  });

  it('E2E_GPU and MARFT_GPU=swiftshader force the choice', () => {
    expect(chromiumLaunch({ E2E_GPU: '0', CHROME_GPU_FLAGS: ENV_SH_FLAGS }, probe([NVIDIA_ICD])).gpuFlags).toBe(false);
    expect(chromiumLaunch({ MARFT_GPU: 'swiftshader' }, probe([NVIDIA_ICD])).gpuFlags).toBe(false);
    expect(chromiumLaunch({ E2E_GPU: '1' }, probe([])).args).toContain('--use-angle=vulkan');
  });
});

describe('chromiumLaunch: the binary', () => {
  it("$CHROME first, then $CHROMIUM_PATH, then Debian's chromium", () => {
    const files = ['/tmp/chrome/chromium-headless-shell', '/opt/chrome', '/usr/bin/chromium'];
    expect(findChromium({ CHROME: '/tmp/chrome/chromium-headless-shell', CHROMIUM_PATH: '/opt/chrome' }, probe([], files))).toBe(
      '/tmp/chrome/chromium-headless-shell',
    );
    expect(findChromium({ CHROMIUM_PATH: '/opt/chrome' }, probe([], files))).toBe('/opt/chrome');
    expect(chromiumLaunch({ CHROME: '/missing' }, probe([], files)).executablePath).toBe('/usr/bin/chromium');
    expect(chromiumLaunch({}, probe([], [])).executablePath).toBeUndefined();
  });
});

describe('adapterLabel: a figure is labelled GPU only for a hardware adapter', () => {
  const a = (o: Partial<AdapterSummary>): AdapterSummary => ({
    vendor: '',
    architecture: '',
    device: '',
    description: '',
    features: [],
    isFallback: false,
    ...o,
  });
  it('the H200 as Chrome reports it', () => {
    expect(adapterLabel(a({ vendor: 'nvidia', device: '0x2335', description: 'NVIDIA H200' }))).toEqual({
      kind: 'gpu',
      label: 'GPU (nvidia NVIDIA H200)',
    });
  });
  it('SwiftShader, by the fallback bit or by its name (also under the GPU flags)', () => {
    expect(adapterLabel(a({ vendor: 'google', isFallback: true })).kind).toBe('software');
    expect(adapterLabel(a({ vendor: 'google', architecture: 'swiftshader', description: 'SwiftShader Device (Subzero)' })).kind).toBe(
      'software',
    );
    expect(adapterLabel(null).kind).toBe('none');
  });
});

describe('chromiumLaunch: the benchmarks', () => {
  it('developerFeatures adds unrounded GPU timestamps on SwiftShader too, once', () => {
    expect(chromiumLaunch({}, probe([]), { developerFeatures: true }).args).toContain('--enable-webgpu-developer-features');
    const gpu = chromiumLaunch({}, probe([NVIDIA_ICD]), { developerFeatures: true }).args;
    expect(gpu.filter((a) => a === '--enable-webgpu-developer-features')).toHaveLength(1);
  });
});
