// Compiling WGSL for the WebGPU compute sources: one place that joins a shader's sources (e.g. wide_int.wgsl before
// the shader's own) and turns compiler errors into an Error naming the shader.
export async function compileShader(device: GPUDevice, label: string, ...sources: string[]): Promise<GPUShaderModule> {
  const module = device.createShaderModule({ code: sources.join('\n'), label });
  const info = await module.getCompilationInfo();
  const errors = info.messages.filter((m) => m.type === 'error');
  if (errors.length) throw new Error(label + ': ' + errors.map((m) => m.message).join('; '));
  return module;
}
