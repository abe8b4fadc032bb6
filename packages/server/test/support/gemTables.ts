// The Ruby gem's tables for the rates model (the gem README's: primary index hotel_id,
// room_type, check_in_date; a secondary index hotel_id, gateway, discount_type), as Sequel's
// create_table makes them in lib/shameless/{model,index}.rb: for tests that serve a store the gem
// made, by plain SQL, before the server defines the model.

/**
 * The gem's tables of one shard of a model in `namespace`. With the store's
 * legacy_created_at_is_bigint, created_at is a bigint (of milliseconds).
 */
export function gemTablesSql(
  namespace: string,
  shard: number,
  { model = 'rate', legacyCreatedAtIsBigint = false } = {},
): string[] {
  const pad = String(shard).padStart(6, '0');
  const content = `${namespace}_${model}_${pad}`;
  const primaryIndex = `${namespace}_${model}_primary_index_${pad}`;
  const secondaryIndex = `${namespace}_${model}_secondary_index_${pad}`;
  return [
    `CREATE TABLE \`${content}\` (
      \`id\` INT AUTO_INCREMENT PRIMARY KEY,
      \`uuid\` varchar(36) NULL,
      \`column_name\` varchar(255) NOT NULL,
      \`ref_key\` int NOT NULL,
      \`body\` mediumblob,
      \`created_at\` ${legacyCreatedAtIsBigint ? 'bigint' : 'datetime'} NOT NULL,
      UNIQUE KEY \`${content}_uuid_column_name_ref_key_index\` (\`uuid\`, \`column_name\`, \`ref_key\`)
    )`,
    `CREATE TABLE \`${primaryIndex}\` (
      \`hotel_id\` INT NOT NULL,
      \`room_type\` varchar(255) NOT NULL,
      \`check_in_date\` varchar(255) NOT NULL,
      \`uuid\` varchar(36),
      UNIQUE KEY \`${primaryIndex}_index\` (\`hotel_id\`, \`room_type\`, \`check_in_date\`)
    )`,
    `CREATE TABLE \`${secondaryIndex}\` (
      \`hotel_id\` INT NOT NULL,
      \`gateway\` varchar(255) NOT NULL,
      \`discount_type\` varchar(255) NOT NULL,
      \`uuid\` varchar(36),
      UNIQUE KEY \`${secondaryIndex}_index\` (\`hotel_id\`, \`gateway\`, \`discount_type\`)
    )`,
  ];
}
