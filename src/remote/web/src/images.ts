// Drawing helpers: PNG bytes or RGBA pixels onto a canvas at native resolution (CSS scales it, pixelated).
export async function drawPng(canvas: HTMLCanvasElement, png: Uint8Array): Promise<void> {
  const bitmap = await createImageBitmap(new Blob([png as BlobPart], { type: 'image/png' }), {
    premultiplyAlpha: 'none',
    colorSpaceConversion: 'none',
  });
  canvas.width = bitmap.width;
  canvas.height = bitmap.height;
  const ctx = canvas.getContext('2d')!;
  ctx.imageSmoothingEnabled = false;
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  ctx.drawImage(bitmap, 0, 0);
  bitmap.close();
}

export function drawRgba(canvas: HTMLCanvasElement, rgba: Uint8ClampedArray, rows: number, cols: number): void {
  canvas.width = cols;
  canvas.height = rows;
  canvas.getContext('2d')!.putImageData(new ImageData(new Uint8ClampedArray(rgba), cols, rows), 0, 0);
}

// RGBA pixels of a PNG (for exact comparisons).
export async function decodePng(png: Uint8Array): Promise<{ rgba: Uint8ClampedArray; rows: number; cols: number }> {
  const canvas = document.createElement('canvas');
  await drawPng(canvas, png);
  const data = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
  return { rgba: data, rows: canvas.height, cols: canvas.width };
}
