// The first step of a put whose primary values are not in the cache (primaryKeyCache.ts): try
// to create the record at once, or look the values up first.
//
// Trying the create first costs two round trips when the values are new (the create's two)
// and up to five when a record already holds them (the create finds them taken, reads who
// holds them and commits nothing, then the update's two); looking them up first costs three
// either way. So a model's puts try the create first while more than two thirds of its recent
// misses turned out to be new values: a model fed with new records creates in two round
// trips, and one whose values mostly exist already (a server just started, a cache smaller
// than the working set) looks them up, as it would without the choice.

export type FirstStep = 'create' | 'lookup';

/** How much one miss moves a model's estimate: about the last 16 misses count. */
const WEIGHT = 1 / 16;
/** A model never seen yet: its first puts are creates more often than not. */
const PRIOR_NEW_SHARE = 0.75;
/** Where the two first steps cost the same: 2 × share + 5 × (1 - share) = 3. */
const BREAK_EVEN_NEW_SHARE = 2 / 3;

export class PutRoutes {
  /** Per model: the share of recent misses whose values no record held (weighted). */
  private readonly newShare = new Map<string, number>();

  firstStep(model: string): FirstStep {
    const share = this.newShare.get(model) ?? PRIOR_NEW_SHARE;
    return share > BREAK_EVEN_NEW_SHARE ? 'create' : 'lookup';
  }

  /** A miss of `model` turned out to be new values (`isNew`) or values a record held. */
  observe(model: string, isNew: boolean): void {
    const share = this.newShare.get(model) ?? PRIOR_NEW_SHARE;
    this.newShare.set(model, share + WEIGHT * ((isNew ? 1 : 0) - share));
  }
}
