/**
 * Who asks for an authority change or a lease revocation: the owner, or a seat by name.
 * Its own file because both the authority-change check (authority-change.ts) and the lease
 * cascade it triggers (cascade.ts) name it, and authority-change.ts imports the cascade:
 * here neither has to import the other for the type.
 */
export type Principal = { readonly kind: "owner" } | { readonly kind: "seat"; readonly seat: string };
