/* The admin's graph view (templates/admin/rag/graphnode/graph.html): draws a node's
   neighbourhood from the JSON view with Cytoscape.js. Nodes are coloured by entity type, edges
   by relation; the centre node is larger; a click (or tap) on a node opens its admin page. */
(function () {
  "use strict";

  // Colours that read on light and dark admin themes. The usual node types and relations keep
  // theirs everywhere; any other name gets a colour from its hash, moved on to the next colour
  // not used in this drawing, so that the types (or relations) of one drawing never share one.
  var PALETTE = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#7f7f7f",
    "#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
  ];
  var NODE_COLOURS = {
    page: "#4e79a7", article: "#76b7b2", person: "#f28e2b", organization: "#e15759",
    skill: "#59a14f", agent: "#b07aa1", memory: "#edc948", concept: "#9c755f",
    event: "#ff9da7", document: "#7f7f7f",
  };
  var EDGE_COLOURS = {
    references: "#4e79a7", mentions: "#76b7b2", depends_on: "#e15759", related_to: "#7f7f7f",
  };

  function hashOf(name) {
    var hash = 0;
    for (var i = 0; i < name.length; i++) {
      hash = (hash * 31 + name.charCodeAt(i)) >>> 0;
    }
    return hash;
  }

  function colours(names, fixed) {
    var chosen = {};
    var used = {};
    names.forEach(function (name) {
      if (fixed[name]) { chosen[name] = fixed[name]; used[fixed[name]] = true; }
    });
    names.slice().sort().forEach(function (name) {
      if (chosen[name]) { return; }
      var index = hashOf(name) % PALETTE.length;
      for (var step = 0; step < PALETTE.length && used[PALETTE[index]]; step++) {
        index = (index + 1) % PALETTE.length;
      }
      chosen[name] = PALETTE[index];
      used[PALETTE[index]] = true;
    });
    return chosen;
  }

  function legend(list, chosen, shape) {
    list.textContent = "";
    Object.keys(chosen).sort().forEach(function (name) {
      var item = document.createElement("li");
      var mark = document.createElement("span");
      mark.className = shape;
      mark.style.background = chosen[name];
      item.appendChild(mark);
      item.appendChild(document.createTextNode(name));
      list.appendChild(item);
    });
  }

  // Zoom in, out and fit, as buttons beside the wheel and pinch (templates: #graph-zoom).
  function zoomButtons(cy) {
    var bar = document.getElementById("graph-zoom");
    if (!bar) { return; }
    function zoomBy(factor) {
      var centre = { x: cy.width() / 2, y: cy.height() / 2 };
      cy.zoom({ level: cy.zoom() * factor, renderedPosition: centre });
    }
    bar.querySelector("[data-zoom=in]").addEventListener("click", function () { zoomBy(1.25); });
    bar.querySelector("[data-zoom=out]").addEventListener("click", function () { zoomBy(0.8); });
    bar.querySelector("[data-zoom=fit]").addEventListener("click", function () {
      cy.fit(undefined, 30);
    });
  }

  function draw(container, data) {
    var types = colours(data.nodes.map(function (n) { return n.entity_type; }), NODE_COLOURS);
    var relations = colours(data.edges.map(function (e) { return e.relation_type; }), EDGE_COLOURS);
    var elements = [];
    data.nodes.forEach(function (node) {
      elements.push({
        group: "nodes",
        data: {
          id: String(node.id),
          label: node.name,
          type: node.entity_type,
          colour: types[node.entity_type],
          url: node.url,
          hops: node.hops,
          centre: node.id === data.center ? 1 : 0,
        },
      });
    });
    data.edges.forEach(function (edge) {
      elements.push({
        group: "edges",
        data: {
          id: "e" + edge.id,
          source: String(edge.source),
          target: String(edge.target),
          label: edge.relation_type,
          colour: relations[edge.relation_type],
          arrow: edge.bidirectional ? "none" : "triangle",
        },
      });
    });
    var cy = cytoscape({
      container: container,
      elements: elements,
      wheelSensitivity: 0.3,
      style: [
        {
          selector: "node",
          style: {
            "background-color": "data(colour)",
            label: "data(label)",
            "font-size": 11,
            "text-valign": "bottom",
            "text-margin-y": 4,
            "text-wrap": "ellipsis",
            "text-max-width": 140,
            color: "#333",
            // A label on a light plate: edges pass under it, never across the name.
            "text-background-color": "#fff",
            "text-background-opacity": 0.85,
            "text-background-padding": 2,
            "text-background-shape": "roundrectangle",
            width: 24,
            height: 24,
            "z-index": 10,
          },
        },
        {
          selector: "node[centre = 1]",
          style: { width: 40, height: 40, "border-width": 3, "border-color": "#333", "font-weight": "bold" },
        },
        {
          selector: "edge",
          style: {
            width: 2,
            "line-color": "data(colour)",
            "target-arrow-color": "data(colour)",
            "target-arrow-shape": "data(arrow)",
            "curve-style": "bezier",
            "z-index": 1,
          },
        },
        {
          // A relation's name shows, horizontal and on a plate, while the pointer is on its
          // edge or on one of its ends (the legend names every relation's colour).
          selector: "edge.labelled",
          style: {
            label: "data(label)",
            "font-size": 11,
            color: "#222",
            "text-rotation": "none",
            "text-background-color": "#fff",
            "text-background-opacity": 0.95,
            "text-background-padding": 2,
            "text-background-shape": "roundrectangle",
            width: 3,
            "z-index": 20,
          },
        },
      ],
      layout: {
        name: "concentric",
        concentric: function (node) { return 10 - node.data("hops"); },
        levelWidth: function () { return 1; },
        minNodeSpacing: 40,
        nodeDimensionsIncludeLabels: true, // labels take their room: no name over another
        animate: false,
      },
    });
    cy.on("mouseover", "edge", function (event) { event.target.addClass("labelled"); });
    cy.on("mouseout", "edge", function (event) { event.target.removeClass("labelled"); });
    cy.on("mouseover", "node", function (event) {
      event.target.connectedEdges().addClass("labelled");
    });
    cy.on("mouseout", "node", function (event) {
      event.target.connectedEdges().removeClass("labelled");
    });
    zoomButtons(cy);
    cy.on("tap", "node", function (event) {
      var url = event.target.data("url");
      if (url) { window.location.assign(url); }
    });
    cy.on("mouseover", "node", function () { container.style.cursor = "pointer"; });
    cy.on("mouseout", "node", function () { container.style.cursor = ""; });
    legend(document.getElementById("graph-node-legend"), types, "swatch");
    legend(document.getElementById("graph-edge-legend"), relations, "line");
    var list = document.getElementById("graph-node-list");
    data.nodes.forEach(function (node) {
      var item = document.createElement("li");
      var link = document.createElement("a");
      link.href = node.url;
      link.textContent = node.name;
      item.appendChild(link);
      item.appendChild(document.createTextNode(" (" + node.entity_type + ", " + node.hops + " hop" + (node.hops === 1 ? "" : "s") + ")"));
      list.appendChild(item);
    });
    return cy;
  }

  function start() {
    var container = document.getElementById("graph-canvas");
    var status = document.getElementById("graph-status");
    if (!container) { return; }
    fetch(container.dataset.url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.json();
      })
      .then(function (data) {
        window.engramGraph = draw(container, data);
        status.textContent = data.nodes.length + " nodes, " + data.edges.length + " edges" +
          (data.truncated ? " (the nearest only)" : "") + ". Click a node to open it.";
        container.dataset.ready = "true";
      })
      .catch(function (error) {
        status.textContent = "The graph could not be loaded (" + error.message + ").";
      });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
