// One compute pass for the WebGPU compute sources: `buffers` bound in order (binding i = buffers[i]) to group 0 of
// `pipeline`, groupsX x groupsY workgroups, recorded on `enc`.
export function recordDispatch(device: GPUDevice, enc: GPUCommandEncoder, pipeline: GPUComputePipeline,
                               buffers: GPUBuffer[], groupsX: number, groupsY = 1): void {
  const bind = device.createBindGroup({
    layout: pipeline.getBindGroupLayout(0),
    entries: buffers.map((buffer, binding) => ({ binding, resource: { buffer } })),
  });
  const pass = enc.beginComputePass();
  pass.setPipeline(pipeline);
  pass.setBindGroup(0, bind);
  pass.dispatchWorkgroups(groupsX, groupsY);
  pass.end();
}
