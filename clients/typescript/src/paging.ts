/** Cursor pagination as async iterators: every list route answers `{items, next_cursor}`. */

/** One page of a list route. */
export interface PageShape<T> {
  items: T[];
  next_cursor?: string | null;
}

/**
 * A list: iterate it with `for await` (pages are fetched as the loop goes), or take
 * its pages (`pages()`), its first page (`page()`) or everything (`all()`).
 */
export class Paged<T> implements AsyncIterable<T> {
  constructor(private readonly fetchPage: (cursor: string | undefined) => Promise<PageShape<T>>) {}

  /** One page (the first, or the one at `cursor`). */
  page(cursor?: string): Promise<PageShape<T>> {
    return this.fetchPage(cursor);
  }

  /** Every page, in order. */
  async *pages(): AsyncGenerator<PageShape<T>, void, undefined> {
    let cursor: string | undefined;
    do {
      const page = await this.fetchPage(cursor);
      yield page;
      cursor = page.next_cursor ?? undefined;
    } while (cursor !== undefined);
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    for await (const page of this.pages()) yield* page.items;
  }

  /** Every item of every page. */
  async all(): Promise<T[]> {
    const out: T[] = [];
    for await (const item of this) out.push(item);
    return out;
  }
}
