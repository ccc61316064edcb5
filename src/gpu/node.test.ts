// The CLI's backend per OS (Metal on macOS, D3D12 on Windows, Vulkan elsewhere), the Vulkan driver choice on
// Linux, and the message a machine without a usable GPU gets: pure functions, each OS injected.
import { describe, expect, it } from 'vitest';
import { GpuError } from './errors.ts';
import { type DriverProbe, SWIFTSHADER_ICD, chooseVulkanDriver, dawnBackend, nodeLimits, noGpuHint, vulkanEnvForChild } from './node.ts';

const probe = (hw: string[], files: string[]): DriverProbe => ({ hardwareIcds: () => hw, exists: (p) => files.includes(p) });
const thrown = (f: () => unknown): GpuError => {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(GpuError);
    return e as GpuError;
  }
  throw new Error('did not throw');
};

describe('nodeLimits', () => {
  it("takes the caller's limits, else MARFT_GPU_LIMITS's, else the adapter's; refuses another value", () => {
    expect(nodeLimits(undefined, {})).toBe('adapter');
    expect(nodeLimits(undefined, { MARFT_GPU_LIMITS: 'Default' })).toBe('default');
    expect(nodeLimits('adapter', { MARFT_GPU_LIMITS: 'default' })).toBe('adapter');
    expect(thrown(() => nodeLimits(undefined, { MARFT_GPU_LIMITS: 'laptop' })).message).toMatch(
      /MARFT_GPU_LIMITS is "laptop", not one of adapter, default/,
    );
  });
});

describe('dawnBackend', () => {
  it('asks each OS for its native backend; only Unix sets the Vulkan loader up', () => {
    expect(dawnBackend('darwin')).toEqual({ backend: 'metal', api: 'Metal', vulkanLoader: false });
    expect(dawnBackend('win32')).toEqual({ backend: 'd3d12', api: 'Direct3D 12', vulkanLoader: false });
    expect(dawnBackend('linux')).toEqual({ backend: 'vulkan', api: 'Vulkan', vulkanLoader: true });
    expect(dawnBackend('freebsd').backend).toBe('vulkan');
  });

  it('MARFT_GPU_BACKEND overrides it; Vulkan on Windows leaves the loader alone', () => {
    expect(dawnBackend('win32', { MARFT_GPU_BACKEND: 'Vulkan' })).toEqual({ backend: 'vulkan', api: 'Vulkan', vulkanLoader: false });
    expect(dawnBackend('linux', { MARFT_GPU_BACKEND: 'metal' }).vulkanLoader).toBe(false);
    const e = thrown(() => dawnBackend('linux', { MARFT_GPU_BACKEND: 'opengl' }));
    expect(e.code).toBe('NO_ADAPTER');
    expect(e.message).toMatch(/MARFT_GPU_BACKEND is "opengl", not one of metal, d3d12, vulkan/);
  });
});

describe('noGpuHint', () => {
  it('names what each OS needs', () => {
    expect(noGpuHint('darwin', 'metal')).toMatch(/Metal: macOS 11/);
    expect(noGpuHint('win32', 'd3d12')).toMatch(/Direct3D 12: Windows 10 .*GPU driver/);
    expect(noGpuHint('linux', 'vulkan')).toMatch(/libvulkan1 .*chromium/);
    // a forced backend the OS does not have: undo the override
    expect(noGpuHint('linux', 'metal')).toMatch(/MARFT_GPU_BACKEND=metal is set: unset it/);
  });
});

describe('vulkanEnvForChild', () => {
  it('re-runs nothing on macOS and Windows, where Dawn finds the driver itself', () => {
    const env = { PATH: '/bin' };
    expect(vulkanEnvForChild(env, 'darwin')).toBeNull();
    expect(vulkanEnvForChild(env, 'win32')).toBeNull();
    expect(env).toEqual({ PATH: '/bin' });
  });

  it('on Linux keeps driver variables the user set', () => {
    expect(vulkanEnvForChild({ VK_ICD_FILENAMES: SWIFTSHADER_ICD }, 'linux')).toBeNull();
  });
});

describe('chooseVulkanDriver', () => {
  it('lists hardware drivers before SwiftShader, or SwiftShader alone', () => {
    const env: Record<string, string | undefined> = {};
    expect(chooseVulkanDriver(env, probe(['/usr/share/vulkan/icd.d/nvidia_icd.json'], [SWIFTSHADER_ICD])).reason).toMatch(
      /installed Vulkan drivers/,
    );
    expect(env.VK_DRIVER_FILES).toBe(`/usr/share/vulkan/icd.d/nvidia_icd.json:${SWIFTSHADER_ICD}`);
    const soft: Record<string, string | undefined> = {};
    expect(chooseVulkanDriver(soft, probe([], [SWIFTSHADER_ICD])).reason).toBe('no GPU driver: CPU fallback');
    expect(soft.VK_ICD_FILENAMES).toBe(SWIFTSHADER_ICD);
    const forced: Record<string, string | undefined> = { MARFT_GPU: 'swiftshader' };
    chooseVulkanDriver(forced, probe(['/etc/vulkan/icd.d/radeon_icd.json'], [SWIFTSHADER_ICD]));
    expect(forced.VK_ICD_FILENAMES).toBe(SWIFTSHADER_ICD);
  });

  it('a machine with no driver at all gets the Linux fix', () => {
    const e = thrown(() => chooseVulkanDriver({}, probe([], [])));
    expect(e.code).toBe('NO_ADAPTER');
    expect(e.message).toMatch(/no Vulkan GPU driver found/);
    expect(e.hint).toBe(noGpuHint('linux', 'vulkan'));
    expect(thrown(() => chooseVulkanDriver({ MARFT_GPU: 'swiftshader' }, probe(['/x.json'], []))).message).toMatch(
      /MARFT_GPU=swiftshader, but there is no SwiftShader/,
    );
  });

  it('a driver variable naming no existing file fails before Dawn loads', () => {
    const e = thrown(() => chooseVulkanDriver({ VK_ICD_FILENAMES: '/nope/a.json:/nope/b.json' }, probe([], [SWIFTSHADER_ICD])));
    expect(e.message).toMatch(/VK_ICD_FILENAMES names \/nope\/a\.json, \/nope\/b\.json, and no such file exists/);
    expect(e.hint).toMatch(/point VK_ICD_FILENAMES at an installed Vulkan driver manifest/);
    expect(chooseVulkanDriver({ VK_DRIVER_FILES: `/nope.json:${SWIFTSHADER_ICD}` }, probe([], [SWIFTSHADER_ICD])).reason).toBe(
      'from the environment',
    );
  });
});
