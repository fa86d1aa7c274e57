// WGSL sources are bundled as text (build.mjs: loader .wgsl = text).
declare module '*.wgsl' {
  const source: string;
  export default source;
}
