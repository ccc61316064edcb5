// WGSL sources are imported as text: by Vite/Vitest through the wgsl plugin in vite.config.ts,
// and by esbuild (CLI and benchmark bundles) through `--loader:.wgsl=text`.
declare module '*.wgsl' {
  const source: string;
  export default source;
}
