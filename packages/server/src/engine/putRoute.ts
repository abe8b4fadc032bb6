// The first step of a put whose primary values are not in the cache (primaryKeyCache.ts): try
// to create the record at once, or look the values up first.
//
// Trying the create first costs two round trips when the values are new (the create's two)
// and four when a record already holds them (the create finds them taken and commits nothing,
// then the update's two); looking them up first costs three either way. So a model's puts try
// the create first while most of its recent misses turned out to be new values: a model fed
// with new records creates in two round trips, and one whose values all exist already (a
// server just started, a cache smaller than the working set) loses nothing against looking up.

export type FirstStep = 'create' | 'lookup';

/** How much one miss moves a model's estimate: about the last 16 misses count. */
const WEIGHT = 1 / 16;
/** A model never seen yet: its first puts are creates more often than not. */
const PRIOR_NEW_SHARE = 0.75;

export class PutRoutes {
  /** Per model: the share of recent misses whose values no record held (weighted). */
  private readonly newShare = new Map<string, number>();

  firstStep(model: string): FirstStep {
    return (this.newShare.get(model) ?? PRIOR_NEW_SHARE) >= 0.5 ? 'create' : 'lookup';
  }

  /** A miss of `model` turned out to be new values (`isNew`) or values a record held. */
  observe(model: string, isNew: boolean): void {
    const share = this.newShare.get(model) ?? PRIOR_NEW_SHARE;
    this.newShare.set(model, share + WEIGHT * ((isNew ? 1 : 0) - share));
  }
}
