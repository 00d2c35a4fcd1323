/**
 * A binary min-heap of timed items: earliest `at` first, and among items at the same time the one
 * pushed first (a sequence number breaks ties, so the order never depends on the heap's shape).
 */
export interface Timed {
  at: number;
}

interface Slot<T> {
  at: number;
  seq: number;
  item: T;
}

export class EventHeap<T extends Timed> {
  private readonly slots: Slot<T>[] = [];
  private seq = 0;

  get size(): number {
    return this.slots.length;
  }

  push(item: T): void {
    const slots = this.slots;
    slots.push({ at: item.at, seq: this.seq++, item });
    let i = slots.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(slots, i, parent)) break;
      swap(slots, i, parent);
      i = parent;
    }
  }

  peek(): T | undefined {
    return this.slots[0]?.item;
  }

  pop(): T | undefined {
    const slots = this.slots;
    const top = slots[0];
    if (top === undefined) return undefined;
    const last = slots.pop();
    if (slots.length > 0 && last !== undefined) {
      slots[0] = last;
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        const right = left + 1;
        let least = i;
        if (left < slots.length && before(slots, left, least)) least = left;
        if (right < slots.length && before(slots, right, least)) least = right;
        if (least === i) break;
        swap(slots, i, least);
        i = least;
      }
    }
    return top.item;
  }
}

function before<T>(slots: Slot<T>[], i: number, j: number): boolean {
  const a = slots[i];
  const b = slots[j];
  if (a === undefined || b === undefined) return false;
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

function swap<T>(slots: Slot<T>[], i: number, j: number): void {
  const a = slots[i];
  const b = slots[j];
  if (a === undefined || b === undefined) return;
  slots[i] = b;
  slots[j] = a;
}
