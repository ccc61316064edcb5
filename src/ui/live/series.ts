// Append-only numeric series for the live charts (TF Playground's charts: append and reset only); uPlot
// (Chart.tsx) draws them as views of these arrays, decimating to pixel columns itself.

export class Series {
  xs = new Float64Array(64);
  ys = new Float64Array(64);
  length = 0;

  append(x: number, y: number): void {
    if (this.length === this.xs.length) {
      const grow = (a: Float64Array) => {
        const b = new Float64Array(a.length * 2);
        b.set(a);
        return b;
      };
      this.xs = grow(this.xs);
      this.ys = grow(this.ys);
    }
    this.xs[this.length] = x;
    this.ys[this.length] = y;
    this.length++;
  }

  reset(): void {
    this.length = 0;
  }
}
