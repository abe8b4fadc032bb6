// @shameless/client: the Shameless SDK.

export * from './transport/index.js';
