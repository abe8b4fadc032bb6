// The groups layer's surface, for the model layer above it.

export { GroupMember, rejoinable, type GroupMemberParts } from './groupMember.js';
export type { MemberEvent, MemberEventOf } from './memberEvents.js';
export { MEMBER_LIMITS, memberSettings, type MemberOptions } from './memberSettings.js';
export type { Delivery } from './shardWork.js';
