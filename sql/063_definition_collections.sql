-- harvestflow harvest database, version 063: the collections a harvest definition belongs to.
-- Owner: harvest (harvest.office.definition_edits for the definitions made by people,
-- harvest.selection.transfer for those made from selection records).
--
-- A definition made in the curator pages or with `harvestflow definitions` belongs to the
-- collection its form names; one made by the selection transfer to the collections of its
-- records. Who may edit, deactivate or reactivate it is checked against the roles in these
-- collections (harvest.rights); empty: no collection, the users' global roles.
ALTER TABLE harvestdefinitions ADD COLUMN collections text[] NOT NULL DEFAULT '{}';
