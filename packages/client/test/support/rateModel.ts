// The gem README's rates model: primary (hotel_id, room_type, check_in_date) sharded on
// hotel_id, a secondary index (hotel_id, gateway, discount_type) and a meta cell.

export const RATE_SCHEMA = {
  name: 'rate',
  primary: {
    fields: { hotel_id: 'integer', room_type: 'string', check_in_date: 'string' },
    shardOn: 'hotel_id',
  },
  indices: {
    secondary: {
      fields: { hotel_id: 'integer', gateway: 'string', discount_type: 'string' },
      shardOn: 'hotel_id',
    },
  },
  cells: ['meta'],
} as const;

/** Every index field of a rate, plus content. */
export function rateValues(
  hotelId: number,
  roomType: string,
  checkInDate: string,
  content: Record<string, unknown> = {},
) {
  return {
    hotel_id: hotelId,
    room_type: roomType,
    check_in_date: checkInDate,
    gateway: 'pegasus',
    discount_type: 'geo',
    ...content,
  };
}
