/** A count of bytes shared by concurrent calls, with a ceiling (what calls may hold in memory together). */
export class ByteBudget {
  private held = 0;

  constructor(
    /** The ceiling. */
    readonly limit: number,
  ) {}

  /** Bytes held now. */
  get used(): number {
    return this.held;
  }

  /** Holds `bytes` when they fit under the ceiling; false otherwise (nothing held). Zero always fits. */
  take(bytes: number): boolean {
    if (bytes > 0 && this.held + bytes > this.limit) return false;
    this.held += bytes;
    return true;
  }

  /** Gives back bytes taken before. */
  give(bytes: number): void {
    this.held = Math.max(0, this.held - bytes);
  }
}
