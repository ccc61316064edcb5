// Makes sure the system pieces the tests need are present on a Debian machine: Chromium (for the
// browser tests, and its SwiftShader Vulkan driver for the Node GPU tests) and the Vulkan loader.
// Installs Debian's packages when it can (root or passwordless sudo); otherwise says what to install.
import { execSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { SWIFTSHADER_ICD } from '../src/gpu/node.ts';
import { findChromium } from './chromium-launch.ts';

function hasVulkanLoader(): boolean {
  try {
    return execSync('ldconfig -p', { encoding: 'utf8' }).includes('libvulkan.so.1');
  } catch {
    return ['/usr/lib/x86_64-linux-gnu/libvulkan.so.1', '/usr/lib/aarch64-linux-gnu/libvulkan.so.1'].some(existsSync);
  }
}

function aptInstall(pkgs: string[]): boolean {
  const isRoot = process.getuid?.() === 0;
  const sudo = isRoot ? [] : spawnSync('sudo', ['-n', 'true']).status === 0 ? ['sudo', '-n'] : null;
  if (sudo === null || !existsSync('/usr/bin/apt-get')) return false;
  console.log(`env-check: installing Debian packages: ${pkgs.join(' ')}`);
  const run = (a: string[]): boolean =>
    spawnSync([...sudo, ...a][0], [...sudo, ...a].slice(1), {
      stdio: 'inherit',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    }).status === 0;
  return (
    run(['apt-get', 'install', '-y', '--no-install-recommends', ...pkgs]) ||
    (run(['apt-get', 'update']) && run(['apt-get', 'install', '-y', '--no-install-recommends', ...pkgs]))
  );
}

export function ensureTestEnvironment(): { chromium: string } {
  const missing: string[] = [];
  if (!findChromium() || !existsSync(SWIFTSHADER_ICD)) missing.push('chromium');
  if (!hasVulkanLoader()) missing.push('libvulkan1');
  if (missing.length && !aptInstall(missing)) {
    console.error(
      `env-check: missing ${missing.join(' and ')}.\n` +
        `  Install them with: sudo apt-get install -y ${missing.join(' ')}\n` +
        '  (Chromium runs the browser tests; its SwiftShader driver and libvulkan1 give Node a WebGPU device without a GPU.)\n' +
        '  Or set CHROMIUM_PATH to a Chromium/Chrome binary.',
    );
    process.exit(1);
  }
  const chromium = findChromium();
  if (!chromium) {
    console.error('env-check: Chromium is still missing after the install attempt.');
    process.exit(1);
  }
  return { chromium };
}
