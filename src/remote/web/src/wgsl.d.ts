// WGSL sources (and the widget's style sheet) are bundled as text (build.mjs: loader .wgsl / .css = text).
declare module '*.wgsl' {
  const source: string;
  export default source;
}
declare module '*.css' {
  const text: string;
  export default text;
}
